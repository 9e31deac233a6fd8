// Keeps docs/runs.md honest beyond its snippets: the stores it lists are exported from the entry
// points it names, and its event table lists every event type Nerva writes.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import * as core from "@nerva/core/runs";
import * as redis from "@nerva/core/redis";
import * as sqlite from "@nerva/core/sqlite";

const page = readFileSync(join(dirname(fileURLToPath(import.meta.url)), "runs.md"), "utf8");

describe("docs/runs.md", () => {
  it("lists each run store with the entry point that exports it", () => {
    const rows = [...page.matchAll(/^\| `(\w+RunStore)`\s*\| `(@nerva\/core(?:\/\w+)?)`/gm)];
    expect(rows.map((r) => [r[1], r[2]])).toEqual([
      ["InMemoryRunStore", "@nerva/core"],
      ["SqliteRunStore", "@nerva/core/sqlite"],
      ["RedisRunStore", "@nerva/core/redis"],
    ]);
    const modules: Record<string, object> = {
      "@nerva/core": core,
      "@nerva/core/sqlite": sqlite,
      "@nerva/core/redis": redis,
    };
    for (const [, name, from] of rows)
      expect(modules[from as string]).toHaveProperty(name as string);
  });

  it("describes every event type", () => {
    const table = page.slice(page.indexOf("| type"), page.indexOf("## Retention"));
    const listed = new Set(
      [...table.matchAll(/`((?:run|step|node|tool|output)\.\w+)`/g)].map((m) => m[1]),
    );
    expect([...listed].sort()).toEqual(Object.values(core.RunEventType).sort());
  });
});
