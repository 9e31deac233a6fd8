// Keeps docs/responder.md honest beyond its snippets (which docs/snippets.test.ts runs): the
// failure lines and markers the page quotes are the ones the code produces.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ChannelResponder, MIN_MAX_LENGTH, failureText } from "@nerva/core/responder";
import { ExecContext, agentResult } from "@nerva/core";

const page = readFileSync(join(dirname(fileURLToPath(import.meta.url)), "responder.md"), "utf8");

describe("docs/responder.md", () => {
  it("quotes the real failure lines", () => {
    for (const status of ["error", "timeout", "wrong_handler"] as const) {
      const line = failureText(agentResult("h", { status, error: "<error>" }));
      const prefix = line?.slice(0, line.indexOf(":") + 1);
      expect(page).toContain(`\`${prefix}`);
    }
  });

  it("quotes the real truncation markers and minimum length", async () => {
    const ctx = ExecContext.create();
    const r = new ChannelResponder({
      channels: { small: { format: "plain", maxLength: MIN_MAX_LENGTH } },
    });
    const cut = await r.format(agentResult("h", { output: "x ".repeat(200) }), "small", ctx);
    expect(cut.text).toMatch(/ … \[truncated: \d+ more characters\]$/);
    expect(page).toContain('`" … [truncated: N more characters]"`');
    let streamed = "";
    for (let i = 0; i < 50; i++) streamed += r.formatChunk("word ", "small", ctx);
    streamed += r.endStream("small", ctx);
    expect(streamed).toContain(` … [truncated: the reply exceeded ${MIN_MAX_LENGTH} characters]`);
    expect(page).toContain('`" … [truncated: the reply exceeded N characters]"`');
    expect(page).toContain(`at least ${MIN_MAX_LENGTH} (\`MIN_MAX_LENGTH\``);
  });
});
