// Graph executions across real processes on Redis (NERVA_REDIS_URL, default 127.0.0.1:6379, a key
// prefix of their own): workers SIGKILLed mid-graph at least 20 times, the same scenario as on
// SQLite (fixtures/graph-processes.test-support.ts).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { RedisRunStore } from "../../runs/redis/redis-run-store.js";
import { REDIS_URL, dropPrefixes, testPrefix } from "../../runs/redis/redis.test-support.js";
import { graphCrashScenario } from "./fixtures/graph-processes.test-support.js";

const dir = mkdtempSync(join(tmpdir(), "nerva-graph-redis-"));
const prefixes: string[] = [];
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await dropPrefixes(prefixes);
});

/** A RedisRunStore under a prefix of its own, dropped after the tests. */
function redisStore(label: string): { store: RedisRunStore; prefix: string } {
  const prefix = testPrefix(label);
  prefixes.push(prefix);
  return { store: new RedisRunStore({ url: REDIS_URL, prefix }), prefix };
}

describe("graph executions across processes (Redis)", () => {
  it(
    "survive at least 20 SIGKILLs mid-graph: every execution completes with the uninterrupted state, no node body starts after its commit",
    { timeout: 300_000 },
    async () => {
      const { store, prefix } = redisStore("graph-crash");
      try {
        const { kills } = await graphCrashScenario({
          store,
          cleanStore: () => redisStore("graph-clean").store,
          storeConfig: { redisUrl: REDIS_URL, prefix },
          log: join(dir, "crash.jsonl"),
        });
        expect(kills).toBeGreaterThanOrEqual(20);
      } finally {
        await store.close();
      }
    },
  );
});
