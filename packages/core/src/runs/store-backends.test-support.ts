// The three run stores a cross-store test loops over, each a real one: in memory, a SQLite file in
// a temporary folder, Redis under a fresh key prefix. Registers its own cleanup (the folder and the
// prefixes) with vitest's afterAll.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import { InMemoryRunStore } from "./memory/in-memory-store.js";
import { REDIS_URL, dropPrefixes, testPrefix } from "./redis/redis.test-support.js";
import { RedisRunStore } from "./redis/redis-run-store.js";
import { SqliteRunStore } from "./sqlite/sqlite-run-store.js";
import type { RunStore } from "./store.js";

/** `[label, open]` for each store; `name` tells the files and prefixes of one test file apart. */
export function storeBackends(name: string): [string, () => RunStore][] {
  const dir = mkdtempSync(join(tmpdir(), `nerva-${name}-`));
  const prefixes: string[] = [];
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await dropPrefixes(prefixes);
  });
  let n = 0;
  return [
    ["memory", () => new InMemoryRunStore()],
    ["sqlite", () => new SqliteRunStore({ path: join(dir, `${name}-${++n}.db`) })],
    [
      "redis",
      () => {
        const prefix = testPrefix(name);
        prefixes.push(prefix);
        return new RedisRunStore({ url: REDIS_URL, prefix });
      },
    ],
  ];
}
