// Keeps docs/router.md honest beyond its snippets (which docs/snippets.test.ts runs): every router
// in its overview table is exported from @nerva/core and has a section of its own.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import * as core from "@nerva/core/router";

const page = readFileSync(join(dirname(fileURLToPath(import.meta.url)), "router.md"), "utf8");

describe("docs/router.md", () => {
  it("lists exported routers, each with its own section", () => {
    const listed = [...page.matchAll(/^\| `(\w+Router)`/gm)].map((m) => m[1] as string);
    expect(listed).toEqual(["RuleRouter", "EmbeddingRouter", "LlmRouter", "HybridRouter"]);
    for (const name of listed) {
      expect(core).toHaveProperty(name);
      expect(page).toContain(`\n## ${name}\n`);
    }
  });
});
