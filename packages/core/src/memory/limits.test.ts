// Memory metadata is caller data that every store serialises or copies (both recurse): deep or
// huge metadata must be a typed INVALID_INPUT, never a RangeError, on every store, whether it
// comes through TieredMemory or straight to the store, and must leave nothing behind.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import type { JsonValue } from "../types/agent.js";
import { REDIS_URL, dropPrefixes, testPrefix } from "../runs/redis/redis.test-support.js";
import { InMemoryMemoryStore } from "./in-memory-store.js";
import { RedisMemoryStore } from "./redis-memory-store.js";
import { SqliteMemoryStore } from "./sqlite-memory-store.js";
import { TieredMemory } from "./tiered-memory.js";
import type { MemoryItem, MemoryStore } from "./types.js";

const dir = mkdtempSync(join(tmpdir(), "nerva-memory-limits-"));
const prefixes: string[] = [];
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await dropPrefixes(prefixes);
});
let files = 0;

function redisStore(): MemoryStore {
  const prefix = testPrefix("limits");
  prefixes.push(prefix);
  return new RedisMemoryStore({ url: REDIS_URL, prefix: `${prefix}:` });
}

const STORES: [string, () => MemoryStore][] = [
  ["InMemoryMemoryStore", () => new InMemoryMemoryStore()],
  ["SqliteMemoryStore", () => new SqliteMemoryStore({ path: join(dir, `m-${++files}.db`) })],
  ["RedisMemoryStore", redisStore],
];

type Kind = "array" | "object";

/** A value of `depth` nested containers following `pattern`, built without recursion. */
function nested(depth: number, pattern: readonly Kind[]): JsonValue {
  let v: JsonValue = "leaf";
  for (let i = depth - 1; i >= 0; i--) v = pattern[i % pattern.length] === "array" ? [v] : { k: v };
  return v;
}

async function thrown(promise: Promise<unknown>): Promise<NervaError> {
  try {
    await promise;
  } catch (err) {
    // A RangeError here is the defect this file guards against.
    expect(err).toBeInstanceOf(NervaError);
    return err as NervaError;
  }
  throw new Error("expected a rejection");
}

const ctx = () => ExecContext.create({ userId: "u1", sessionId: "s1" });

describe.each(STORES)("%s: metadata bounds", (_name, make) => {
  it("refuses metadata nested thousands of levels deep through TieredMemory, storing nothing", async () => {
    const memory = new TieredMemory({ store: make() });
    const c = ctx();
    for (const pattern of [["array"], ["object"], ["object", "array"]] as Kind[][]) {
      const err = await thrown(
        memory.store({ content: "deep", metadata: { v: nested(50_000, pattern) } }, c),
      );
      expect(err.code).toBe(ErrorCode.INVALID_INPUT);
      expect(err.message).toMatch(/^Invalid event\.metadata: nested deeper than 64 levels\./);
      expect(err.issues[0]?.path).toBe("event.metadata");
    }
    const err = await thrown(
      memory.store(
        { kind: "fact", key: "k", content: "deep", metadata: { v: nested(5000, ["array"]) } },
        c,
      ),
    );
    expect(err.code).toBe(ErrorCode.INVALID_INPUT);
    const recall = await memory.recall("", c);
    expect([...recall.hot, ...recall.warm]).toEqual([]);
    // The memory is not broken: an ordinary event goes in and comes back.
    await memory.store({ content: "fine", metadata: { a: [1, { b: 2 }] } }, c);
    expect((await memory.recall("", c)).hot.map((i) => i.metadata)).toEqual([{ a: [1, { b: 2 }] }]);
    await memory.close();
  });

  it("refuses metadata with more than a million values, and cyclic metadata", async () => {
    const memory = new TieredMemory({ store: make() });
    const c = ctx();
    const wide = await thrown(
      memory.store({ content: "wide", metadata: { v: new Array<number>(1_000_001).fill(0) } }, c),
    );
    expect(wide.message).toMatch(/more than 1000000 values/);
    const cyclic: Record<string, JsonValue> = {};
    cyclic["self"] = cyclic;
    const loop = await thrown(memory.store({ content: "loop", metadata: cyclic }, c));
    expect(loop.code).toBe(ErrorCode.INVALID_INPUT);
    await memory.close();
  });

  it("refuses a direct write of such metadata with the same typed error, writing nothing", async () => {
    const store = make();
    const item = (metadata: Record<string, JsonValue>): MemoryItem => ({
      id: `i-${Math.random()}`,
      kind: "turn",
      role: "user",
      key: null,
      content: "direct",
      metadata,
      createdAt: Date.now(),
    });
    const err = await thrown(
      store.write({
        namespace: "user:u1",
        session: "s1",
        item: item({ v: nested(20_000, ["object"]) }),
        hot: { limit: 10 },
        warm: true,
        vector: [1, 0],
      }),
    );
    expect(err.code).toBe(ErrorCode.INVALID_INPUT);
    expect(err.message).toMatch(/^Invalid item\.metadata: nested deeper than 64 levels/);
    const read = await store.read({
      namespace: "user:u1",
      session: "s1",
      hotLimit: 10,
      warmLimit: 10,
      cold: { vector: [1, 0], limit: 10 },
    });
    expect(read).toEqual({ hot: [], warm: [], cold: [] });
    await store.close();
  });

  it("stores metadata up to 64 levels and refuses deeper, whatever its shape (generated)", async () => {
    const memory = new TieredMemory({ store: make(), hotTurns: 1 });
    const c = ctx();
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.integer({ min: 0, max: 70 }), fc.integer({ min: 70, max: 20_000 })),
        fc.array(fc.constantFrom<Kind>("array", "object"), { minLength: 1, maxLength: 5 }),
        async (depth, pattern) => {
          // The metadata object is the first level.
          const metadata = { v: nested(depth, pattern) };
          if (depth + 1 <= 64) {
            const item = await memory.store({ content: "x", metadata }, c);
            expect(item.metadata).toEqual(metadata);
            expect((await memory.recall("", c)).hot[0]?.metadata).toEqual(metadata);
          } else {
            const err = await thrown(memory.store({ content: "x", metadata }, c));
            expect(err.code).toBe(ErrorCode.INVALID_INPUT);
          }
        },
      ),
      { numRuns: 60 },
    );
    await memory.close();
  });
});
