// Keeps docs/observability.md honest beyond its snippets: the sinks it lists from @nerva/core are
// exported, and its table of JSON log fields is exactly what JsonLinesTraceSink writes.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import * as core from "@nerva/core";
import * as tracing from "@nerva/core/tracing";

const page = readFileSync(
  join(dirname(fileURLToPath(import.meta.url)), "observability.md"),
  "utf8",
);

/** The rows of the markdown table whose header starts with `| first |`. */
function table(first: string): string[][] {
  const start = page.indexOf(`| ${first}`);
  const rows: string[][] = [];
  for (const line of page.slice(start).split("\n").slice(2)) {
    if (!line.startsWith("|")) break;
    rows.push(
      line
        .split("|")
        .slice(1, -1)
        .map((c) => c.trim()),
    );
  }
  return rows;
}

describe("docs/observability.md", () => {
  it("lists the sinks of @nerva/core that this page documents, and they are exported", () => {
    const own = table("sink")
      .filter(
        ([, from, what]) => from === "`@nerva/core/tracing`" && !/\]\(\w[\w-]*\.md\)/.test(what!),
      )
      .map(([name]) => name!.replace(/`/g, ""));
    expect(own).toEqual(["MemoryTraceSink", "JsonLinesTraceSink", "UsageMeter"]);
    for (const name of own) expect(tracing).toHaveProperty(name);
  });

  it("documents exactly the fields JsonLinesTraceSink writes, for spans and for events", async () => {
    const rows = table("field");
    const documented = (column: 1 | 2): string[] =>
      rows.filter((r) => r[column] !== "—").map((r) => r[0]!.replace(/`/g, ""));
    const lines: string[] = [];
    const sink = new tracing.JsonLinesTraceSink({ write: (line) => void lines.push(line) });
    const ctx = core.ExecContext.create({ traceSink: sink });
    await ctx.span("handle", (inner) => void inner.event("e"));
    await sink.forceFlush();
    const [event, span] = lines.map((l) => Object.keys(JSON.parse(l) as object));
    expect(span).toEqual(documented(1));
    expect(event).toEqual(documented(2));
  });
});
