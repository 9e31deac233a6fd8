import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { ErrorCode, type NervaError } from "../errors.js";
import { REDIS_URL, dropPrefixes, testPrefix } from "../runs/redis/redis.test-support.js";
import { describeMemoryContract, wordEmbedder } from "../testing/memory-contract.js";
import { memoryNamespace } from "./namespace.js";
import { RedisMemoryStore, type RedisMemoryStoreOptions } from "./redis-memory-store.js";
import { TieredMemory } from "./tiered-memory.js";
import type { MemoryItem } from "./types.js";

const prefixes: string[] = [];
afterAll(() => dropPrefixes(prefixes));

describeMemoryContract(
  "RedisMemoryStore",
  async () => {
    const prefix = `${testPrefix("memory")}:`;
    prefixes.push(prefix.slice(0, -1));
    return {
      store: new RedisMemoryStore({ url: REDIS_URL, prefix }),
      reopen: async () => new RedisMemoryStore({ url: REDIS_URL, prefix }),
    };
  },
  { persistent: true },
);

function store(options: Partial<RedisMemoryStoreOptions> = {}): RedisMemoryStore {
  const prefix = testPrefix("memory");
  prefixes.push(prefix);
  return new RedisMemoryStore({ url: REDIS_URL, prefix: `${prefix}:`, ...options });
}

const item = (id: string, content: string, key: string | null = null): MemoryItem => ({
  id,
  kind: key === null ? "episode" : "fact",
  role: null,
  key,
  content,
  metadata: {},
  createdAt: Date.now(),
});

describe("RedisMemoryStore specifics", () => {
  it("is shared by replicas, and concurrent writes from both stay whole", async () => {
    const a = store();
    const b = new RedisMemoryStore({ url: REDIS_URL, prefix: a.prefix });
    const raw = new Redis(REDIS_URL);
    try {
      const ma = new TieredMemory({ store: a, hotTurns: 5, embed: wordEmbedder });
      const mb = new TieredMemory({ store: b, hotTurns: 5, embed: wordEmbedder });
      const ctx = ExecContext.create({ userId: "u1", sessionId: "s1" });
      // 100 turns and 100 replacements of one fact, half from each replica, all at once.
      await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          Promise.all([
            (i % 2 ? ma : mb).store({ content: `turn ${i}` }, ctx),
            (i % 2 ? mb : ma).store(
              { kind: "fact", key: "city", content: `city ${i} berlin` },
              ctx,
            ),
          ]),
        ),
      );
      const seen = await mb.recall({ text: "berlin", warmLimit: 100, coldLimit: 100 }, ctx);
      expect(seen.hot).toHaveLength(5);
      expect(seen.warm).toHaveLength(1);
      // Facts are not embedded: the cold tier holds nothing, and no replaced fact lingers.
      expect(seen.cold).toEqual([]);
      const ns = memoryNamespace(ctx).namespace;
      const base = `${a.prefix}{${encodeURIComponent(ns)}}:`;
      expect(await raw.hlen(`${base}items`)).toBe(1);
      expect(await raw.zcard(`${base}warm`)).toBe(1);
      expect(await raw.hget(`${base}keys`, "city")).toBe(seen.warm[0]?.id);
    } finally {
      raw.disconnect();
      await a.close();
      await b.close();
    }
  });

  it("keeps namespaces and sessions apart however they are spelled", async () => {
    const s = store();
    try {
      // Pairs that would share keys if namespace, session and tier were simply joined by ":".
      const places: [string, string][] = [
        ["a", "b:warm"],
        ["a:hot:b", "warm"],
        ["a}:hot", "b"],
        ["a", "b"],
        ["{a}", "b"],
      ];
      for (const [namespace, session] of places) {
        await s.write({
          namespace,
          session,
          item: { ...item(`${namespace}|${session}`, `${namespace}|${session}`), kind: "turn" },
          hot: { limit: 10 },
          warm: true,
          vector: [1, 0],
        });
      }
      for (const [namespace, session] of places) {
        const read = await s.read({
          namespace,
          session,
          hotLimit: 10,
          warmLimit: 10,
          cold: { vector: [1, 0], limit: 10 },
        });
        // The hot tier is the session's; warm and cold are the whole namespace's, newest first.
        const mine = places
          .filter(([n]) => n === namespace)
          .map(([n, s]) => `${n}|${s}`)
          .reverse();
        expect(read.hot.map((i) => i.content)).toEqual([`${namespace}|${session}`]);
        expect(read.warm.map((i) => i.content)).toEqual(mine);
        expect(read.cold.map((c) => c.item.content)).toEqual(mine);
      }
    } finally {
      await s.close();
    }
  });

  it("scores only the newest coldCandidates items of a namespace", async () => {
    const s = store({ coldCandidates: 2 });
    try {
      const write = (id: string, vector: number[]) =>
        s.write({ namespace: "user:u1", session: "", item: item(id, id), warm: true, vector });
      await write("oldest, best match", [1, 0]);
      await write("newer", [1, 1]);
      await write("newest", [0, 1]);
      const read = await s.read({
        namespace: "user:u1",
        session: "",
        hotLimit: 0,
        warmLimit: 0,
        cold: { vector: [1, 0], limit: 5 },
      });
      expect(read.cold.map((c) => c.item.content)).toEqual(["newer", "newest"]);
      expect(read.cold[0]?.score).toBeCloseTo(Math.SQRT1_2, 12);
    } finally {
      await s.close();
    }
  });

  it("validates its options, naming the field", async () => {
    const client = new Redis(REDIS_URL, { lazyConnect: true });
    const field = (options: unknown): string => {
      try {
        new RedisMemoryStore(options as RedisMemoryStoreOptions);
      } catch (err) {
        expect((err as NervaError).code).toBe(ErrorCode.INVALID_OPTIONS);
        return (err as NervaError).issues.map((i) => i.path).join(",");
      }
      throw new Error("expected INVALID_OPTIONS");
    };
    expect(field({ url: REDIS_URL, client })).toBe("options.client");
    expect(field({ client: { status: "ready" } })).toBe("options.client");
    expect(field({ prefix: "has space" })).toBe("options.prefix");
    expect(field({ prefix: "{tag}" })).toBe("options.prefix");
    expect(field({ coldCandidates: 0 })).toBe("options.coldCandidates");
    expect(field({ timeoutSeconds: 0 })).toBe("options.timeoutSeconds");
    expect(field({ nope: 1 })).toBe("options");
    client.disconnect();
  });
});
