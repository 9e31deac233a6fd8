// Keeps docs/registry.md honest beyond its snippets: the registries in its table are exported
// from the entry points it names.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import * as registry from "@nerva/core/registry";
import * as sqlite from "@nerva/core/sqlite";

const page = readFileSync(join(dirname(fileURLToPath(import.meta.url)), "registry.md"), "utf8");

describe("docs/registry.md", () => {
  it("lists each registry with the entry point that exports it", () => {
    const rows = [
      ...page.matchAll(/^\| `(\w+Registry)`\s*\| `(@nerva\/core\/(?:registry|sqlite))`/gm),
    ];
    expect(rows.map((r) => [r[1], r[2]])).toEqual([
      ["InMemoryRegistry", "@nerva/core/registry"],
      ["SqliteRegistry", "@nerva/core/sqlite"],
    ]);
    const modules: Record<string, object> = {
      "@nerva/core/registry": registry,
      "@nerva/core/sqlite": sqlite,
    };
    for (const [, name, from] of rows)
      expect(modules[from as string]).toHaveProperty(name as string);
  });
});
