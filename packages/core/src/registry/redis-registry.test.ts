import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { ErrorCode, type NervaError } from "../errors.js";
import { RedisMemoryStore } from "../memory/redis-memory-store.js";
import { TieredMemory } from "../memory/tiered-memory.js";
import { REDIS_URL, dropPrefixes, testPrefix } from "../runs/redis/redis.test-support.js";
import { describeRegistryContract } from "../testing/registry-contract.js";
import { InMemoryRegistry } from "./in-memory-registry.js";
import { RedisRegistry, type RedisRegistryOptions } from "./redis-registry.js";

const prefixes: string[] = [];
afterAll(() => dropPrefixes(prefixes));

function newPrefix(): string {
  const prefix = testPrefix("registry");
  prefixes.push(prefix);
  return `${prefix}:`;
}

describeRegistryContract(
  "RedisRegistry",
  async (options) => {
    const prefix = newPrefix();
    return {
      registry: new RedisRegistry({ ...options, url: REDIS_URL, prefix }),
      reopen: async () => new RedisRegistry({ ...options, url: REDIS_URL, prefix }),
    };
  },
  { persistent: true },
);

describe("RedisRegistry specifics", () => {
  const ctx = () => ExecContext.create({ userId: "ops" });

  it("counts every invocation of concurrent replicas, and they see each other's health", async () => {
    const prefix = newPrefix();
    const a = new RedisRegistry({ url: REDIS_URL, prefix, unhealthyAfterFailures: 3 });
    const b = new RedisRegistry({ url: REDIS_URL, prefix, unhealthyAfterFailures: 3 });
    try {
      await a.register({ kind: "tool", name: "search" }, ctx());
      await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          (i % 2 ? a : b).recordInvocation(
            "tool",
            "search",
            { ok: i % 4 !== 0, latencyMs: 0.5 + (i % 8) * 0.25, error: "503" },
            ctx(),
          ),
        ),
      );
      expect(await b.stats("tool", "search", ctx())).toMatchObject({
        count: 200,
        failures: 50,
        totalLatencyMs: 25 * (0.5 + 0.75 + 1 + 1.25 + 1.5 + 1.75 + 2 + 2.25),
        minLatencyMs: 0.5,
        maxLatencyMs: 2.25,
      });
      for (let i = 0; i < 3; i++) {
        await b.recordInvocation("tool", "search", { ok: false, latencyMs: 1 }, ctx());
      }
      expect(await a.get("tool", "search", ctx())).toMatchObject({
        health: "unhealthy",
        healthDetail: "3 consecutive failed invocations (last: failed)",
      });
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("keeps the same numbers as the in-memory registry, to the last bit", async () => {
    const redis = new RedisRegistry({ url: REDIS_URL, prefix: newPrefix() });
    const heap = new InMemoryRegistry();
    try {
      const latencies = [0.1, 0.2, 1e-7, 123456.789, 1 / 3, 2 ** 40 + 0.5];
      for (const registry of [redis, heap]) {
        await registry.register({ kind: "agent", name: "a" }, ctx());
        for (const latencyMs of latencies) {
          await registry.recordInvocation("agent", "a", { ok: true, latencyMs }, ctx());
        }
      }
      const [fromRedis, fromHeap] = await Promise.all([
        redis.stats("agent", "a", ctx()),
        heap.stats("agent", "a", ctx()),
      ]);
      expect({ ...fromRedis, lastInvokedAt: 0 }).toEqual({ ...fromHeap, lastInvokedAt: 0 });
    } finally {
      await redis.close();
      await heap.close();
    }
  });

  it("keeps names apart however they are spelled, and shares a prefix with memory safely", async () => {
    const prefix = newPrefix();
    const registry = new RedisRegistry({ url: REDIS_URL, prefix });
    const memory = new TieredMemory({ store: new RedisMemoryStore({ url: REDIS_URL, prefix }) });
    try {
      const names = ["a", "a:b", "a%3Ab", "tool:a", "index:tool", "{a}"];
      for (const kind of ["agent", "tool"] as const) {
        for (const name of names) await registry.register({ kind, name, description: kind }, ctx());
      }
      await memory.store(
        { content: "hello" },
        ExecContext.create({ userId: "entry:tool:a", sessionId: "s" }),
      );
      await registry.unregister("agent", "a:b", ctx());
      const found = await registry.discover(ctx());
      expect(found.map((e) => `${e.kind}/${e.name}/${e.description}`)).toEqual([
        ...names
          .filter((n) => n !== "a:b")
          .sort()
          .map((n) => `agent/${n}/agent`),
        ...[...names].sort().map((n) => `tool/${n}/tool`),
      ]);
      expect(await registry.get("tool", "a:b", ctx())).toMatchObject({ name: "a:b" });
    } finally {
      await registry.close();
      await memory.close();
    }
  });

  it("validates its options, naming the field", () => {
    const client = new Redis(REDIS_URL, { lazyConnect: true });
    const field = (options: unknown): string => {
      try {
        new RedisRegistry(options as RedisRegistryOptions);
      } catch (err) {
        expect((err as NervaError).code).toBe(ErrorCode.INVALID_OPTIONS);
        return (err as NervaError).issues.map((i) => i.path).join(",");
      }
      throw new Error("expected INVALID_OPTIONS");
    };
    expect(field({ url: REDIS_URL, client })).toBe("options.client");
    expect(field({ client: "redis://x" })).toBe("options.client");
    expect(field({ prefix: "" })).toBe("options.prefix");
    expect(field({ unhealthyAfterFailures: -1 })).toBe("options.unhealthyAfterFailures");
    expect(field({ timeoutSeconds: Infinity })).toBe("options.timeoutSeconds");
    client.disconnect();
  });
});
