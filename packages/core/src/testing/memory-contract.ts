import { afterEach, describe, expect, it } from "vitest";
import { ExecContext, type ExecContextOptions } from "../context/exec-context.js";
import { ErrorCode } from "../errors.js";
import { TieredMemory, type TieredMemoryOptions } from "../memory/tiered-memory.js";
import type { EmbedFn, MemoryStore } from "../memory/types.js";
import { rejection } from "./rejection.js";

/**
 * Builds a fresh, empty store for one test. `reopen` (for persistent stores) closes nothing and
 * returns a new store over the same data, as after a restart.
 */
export type MemoryContractSetup = () => Promise<{
  store: MemoryStore;
  reopen?: () => Promise<MemoryStore>;
}>;

const VOCABULARY = ["berlin", "flight", "hotel", "paris", "train", "pizza", "meeting", "budget"];

/**
 * A deterministic embedder for tests: one dimension per vocabulary word plus one for anything
 * else, so texts sharing words are similar.
 */
export const wordEmbedder: EmbedFn = async (texts) =>
  texts.map((text) => {
    const v = new Array<number>(VOCABULARY.length + 1).fill(0);
    for (const word of text.toLowerCase().split(/[^a-z]+/)) {
      if (word === "") continue;
      const i = VOCABULARY.indexOf(word);
      const at = i === -1 ? VOCABULARY.length : i;
      v[at] = (v[at] ?? 0) + 1;
    }
    return v;
  });

function ctxOf(options: ExecContextOptions): ExecContext {
  return ExecContext.create(options);
}

/**
 * The behaviour every {@link MemoryStore} must show behind {@link TieredMemory}: tiers, scope
 * isolation and atomic writes. Run it from a vitest file for each implementation.
 *
 * @example
 * describeMemoryContract("InMemoryMemoryStore", async () => ({ store: new InMemoryMemoryStore() }));
 * describeMemoryContract("SqliteMemoryStore", async () => { ... return { store, reopen } }, { persistent: true });
 */
export function describeMemoryContract(
  label: string,
  setup: MemoryContractSetup,
  options: { persistent?: boolean } = {},
): void {
  describe(`memory contract: ${label}`, () => {
    const open: MemoryStore[] = [];
    afterEach(async () => {
      for (const s of open.splice(0)) await s.close();
    });
    const make = async (options: Omit<TieredMemoryOptions, "store"> = {}) => {
      const built = await setup();
      open.push(built.store);
      return { memory: new TieredMemory({ ...options, store: built.store }), ...built };
    };

    it("keeps the newest turns of a session in the hot tier, oldest first", async () => {
      const { memory } = await make({ hotTurns: 3 });
      const ctx = ctxOf({ userId: "u1", sessionId: "s1" });
      for (let i = 1; i <= 5; i++) {
        await memory.store({ content: `turn ${i}`, role: i % 2 ? "user" : "assistant" }, ctx);
      }
      const { hot, warm, scope } = await memory.recall("", ctx);
      expect(scope).toBe("session");
      expect(hot.map((t) => t.content)).toEqual(["turn 3", "turn 4", "turn 5"]);
      expect(hot.map((t) => t.role)).toEqual(["user", "assistant", "user"]);
      expect(warm).toEqual([]);
      const two = await memory.recall({ tiers: ["hot"], hotLimit: 2 }, ctx);
      expect(two.hot.map((t) => t.content)).toEqual(["turn 4", "turn 5"]);
    });

    it("partitions the hot tier by session and shares warm facts across a user's sessions", async () => {
      const { memory } = await make();
      const s1 = ctxOf({ userId: "u1", sessionId: "s1", memoryScope: "user" });
      const s2 = ctxOf({ userId: "u1", sessionId: "s2", memoryScope: "user" });
      await memory.store({ content: "hello from s1" }, s1);
      await memory.store({ kind: "fact", content: "likes trains" }, s1);
      const fromS2 = await memory.recall("", s2);
      expect(fromS2.hot).toEqual([]);
      expect(fromS2.warm.map((f) => f.content)).toEqual(["likes trains"]);
    });

    it("replaces a fact that has the same key and lists warm items newest first", async () => {
      const { memory } = await make({ warmLimit: 2 });
      const ctx = ctxOf({ userId: "u1", memoryScope: "user" });
      await memory.store({ kind: "fact", key: "city", content: "lives in Paris" }, ctx);
      await memory.store({ kind: "episode", content: "asked about pizza" }, ctx);
      const moved = await memory.store(
        { kind: "fact", key: "city", content: "lives in Berlin", metadata: { since: 2024 } },
        ctx,
      );
      const { warm } = await memory.recall({ tiers: ["warm"], warmLimit: 10 }, ctx);
      expect(warm.map((w) => w.content)).toEqual(["lives in Berlin", "asked about pizza"]);
      expect(warm[0]).toEqual(moved);
      expect(warm[0]?.metadata).toEqual({ since: 2024 });
      expect(warm[0]?.key).toBe("city");
      expect((await memory.recall("", ctx)).warm).toHaveLength(2);
      expect(Object.isFrozen(warm[0])).toBe(true);
    });

    it("finds episodes by similarity in the cold tier, best first", async () => {
      const { memory } = await make({ embed: wordEmbedder, coldLimit: 2 });
      const ctx = ctxOf({ userId: "u1", sessionId: "s1" });
      await memory.store({ kind: "episode", content: "booked a hotel in Paris" }, ctx);
      await memory.store({ kind: "episode", content: "flight to Berlin on Tuesday" }, ctx);
      await memory.store({ kind: "episode", content: "ordered pizza" }, ctx);
      const { cold } = await memory.recall("Berlin flight", ctx);
      expect(cold).toHaveLength(2);
      expect(cold[0]?.item.content).toBe("flight to Berlin on Tuesday");
      expect(cold[0]!.score).toBeGreaterThan(cold[1]!.score);
      const strict = new TieredMemory({ store: open[0]!, embed: wordEmbedder, minScore: 0.3 });
      const best = await strict.recall("Berlin flight", ctx);
      expect(best.cold.map((c) => c.item.content)).toEqual(["flight to Berlin on Tuesday"]);
      expect((await memory.recall({ text: "Berlin", tiers: ["hot"] }, ctx)).cold).toEqual([]);
    });

    it("archives turns into the cold tier when asked, so evicted turns stay searchable", async () => {
      const { memory } = await make({ embed: wordEmbedder, hotTurns: 1, archiveTurns: true });
      const ctx = ctxOf({ userId: "u1", sessionId: "s1" });
      await memory.store({ content: "my budget is 500" }, ctx);
      await memory.store({ content: "show me trains" }, ctx);
      const { hot, cold } = await memory.recall("what was my budget", ctx);
      expect(hot.map((t) => t.content)).toEqual(["show me trains"]);
      expect(cold[0]?.item.content).toBe("my budget is 500");
    });

    it("keeps users apart in user, session and agent scope; only global is shared", async () => {
      const { memory } = await make({ embed: wordEmbedder });
      for (const scope of ["user", "session", "agent"] as const) {
        const a = ctxOf({ userId: "alice", sessionId: "same", memoryScope: scope }).fork({
          agentName: "travel",
        });
        const b = ctxOf({ userId: "bob", sessionId: "same", memoryScope: scope }).fork({
          agentName: "travel",
        });
        await memory.store({ content: `alice ${scope} berlin` }, a);
        await memory.store({ kind: "fact", content: `alice ${scope} fact berlin` }, a);
        await memory.store({ kind: "episode", content: `alice ${scope} episode berlin` }, a);
        const seen = await memory.recall("berlin", b);
        expect([...seen.hot, ...seen.warm, ...seen.cold.map((c) => c.item)]).toEqual([]);
        const own = await memory.recall("berlin", a);
        expect(own.hot).toHaveLength(1);
        expect(own.warm).toHaveLength(2);
        expect(own.cold).toHaveLength(1);
      }
      const other = ctxOf({ userId: "alice", sessionId: "same", memoryScope: "agent" }).fork({
        agentName: "billing",
      });
      expect((await memory.recall("berlin", other)).warm).toEqual([]);
      await memory.store(
        { kind: "fact", content: "office closes at 6", scope: "global" },
        ctxOf({ userId: "alice" }),
      );
      const anyone = await memory.recall({ scope: "global" }, ctxOf({}));
      expect(anyone.warm.map((w) => w.content)).toEqual(["office closes at 6"]);
    });

    it("refuses a scope whose identity is missing instead of using a shared bucket", async () => {
      const { memory } = await make();
      const noUser = ctxOf({ sessionId: "s1", memoryScope: "user" });
      expect((await rejection(memory.store({ content: "x" }, noUser))).code).toBe(
        ErrorCode.UNAUTHENTICATED,
      );
      expect((await rejection(memory.recall("", noUser))).code).toBe(ErrorCode.UNAUTHENTICATED);
      const noSession = ctxOf({ userId: "u1", memoryScope: "session" });
      const err = await rejection(memory.store({ content: "x" }, noSession));
      expect(err.code).toBe(ErrorCode.INVALID_INPUT);
      expect(err.message).toContain("ctx.sessionId");
      const noAgent = ctxOf({ userId: "u1", memoryScope: "agent" });
      expect((await rejection(memory.store({ content: "x" }, noAgent))).message).toContain(
        "ctx.agentName",
      );
      const global = await memory.recall({ scope: "global" }, ctxOf({}));
      expect([...global.hot, ...global.warm]).toEqual([]);
    });

    it("writes atomically: a failing embedder leaves nothing behind", async () => {
      let calls = 0;
      const flaky: EmbedFn = async (texts) => {
        calls++;
        if (texts[0]?.includes("fail")) throw new Error("embedding service down");
        if (texts[0]?.includes("short")) return [];
        return wordEmbedder(texts);
      };
      const { memory } = await make({ embed: flaky });
      const ctx = ctxOf({ userId: "u1", sessionId: "s1" });
      const err = await rejection(memory.store({ kind: "episode", content: "fail berlin" }, ctx));
      expect(err.code).toBe(ErrorCode.INTERNAL);
      expect(err.message).toContain("embedding service down");
      const short = await rejection(memory.store({ kind: "episode", content: "short" }, ctx));
      expect(short.message).toContain("one vector per text");
      const { warm, cold } = await memory.recall("berlin", ctx);
      expect(warm).toEqual([]);
      expect(cold).toEqual([]);
      expect(calls).toBe(3);
    });

    it("rolls back a store write that fails part-way: no tier keeps any of it", async () => {
      const { store } = await make();
      const item = {
        id: "item-1",
        kind: "episode" as const,
        role: null,
        key: "k",
        content: "half written",
        metadata: {},
        createdAt: Date.now(),
      };
      // A vector whose conversion throws: the failure comes after the other tiers are prepared.
      const poisoned = {
        get length(): number {
          throw new Error("vector source failed");
        },
        [Symbol.iterator]() {
          throw new Error("vector source failed");
        },
      } as unknown as number[];
      await expect(
        store.write({
          namespace: "user:u1",
          session: "s1",
          item,
          hot: { limit: 5 },
          warm: true,
          vector: poisoned,
        }),
      ).rejects.toThrow(/vector source failed/);
      const read = await store.read({
        namespace: "user:u1",
        session: "s1",
        hotLimit: 10,
        warmLimit: 10,
        cold: { vector: [1, 0], limit: 10 },
      });
      expect(read).toEqual({ hot: [], warm: [], cold: [] });
    });

    it("leaves the stage spans to its caller (the orchestrator opens memory.store / memory.recall)", async () => {
      const { memory } = await make();
      const ctx = ctxOf({ userId: "u1", sessionId: "s1" });
      await memory.store({ content: "hi" }, ctx);
      await memory.recall("hi", ctx);
      await rejection(memory.store({ content: "x", role: "user", kind: "fact" }, ctx));
      expect(ctx.spans.map((s) => s.name)).toEqual([]);
    });

    it("validates events and queries, naming the field", async () => {
      const { memory } = await make();
      const ctx = ctxOf({ userId: "u1", sessionId: "s1" });
      const role = await rejection(memory.store({ kind: "fact", content: "x", role: "user" }, ctx));
      expect(role.code).toBe(ErrorCode.INVALID_INPUT);
      expect(role.message).toContain("event.role");
      const empty = await rejection(memory.store({ content: "" }, ctx));
      expect(empty.message).toContain("event.content");
      const limit = await rejection(memory.recall({ hotLimit: -1 }, ctx));
      expect(limit.message).toContain("query.hotLimit");
      expect(() => new TieredMemory({ hotTurns: 0 })).toThrow(/options\.hotTurns/);
      expect(() => new TieredMemory({ archiveTurns: true })).toThrow(/options\.archiveTurns/);
    });

    it("refuses metadata nested too deep with INVALID_INPUT, stores nothing, keeps working", async () => {
      const { memory } = await make();
      const ctx = ctxOf({ userId: "u1", sessionId: "s1" });
      // A few kilobytes of JSON nested thousands of levels deep: recursion would overflow.
      const deep: unknown = JSON.parse("[".repeat(20_000) + "]".repeat(20_000));
      const err = await rejection(
        memory.store({ content: "deep", metadata: { deep } as never }, ctx),
      );
      expect(err.code).toBe(ErrorCode.INVALID_INPUT);
      expect(err.message).toMatch(/event\.metadata: nested deeper than 64 levels/);
      // The limit itself: the metadata object is level 1, so 63 more levels are fine.
      let atLimit: unknown = "bottom";
      for (let i = 0; i < 63; i++) atLimit = i % 2 === 0 ? [atLimit] : { k: atLimit };
      const item = await memory.store(
        { content: "flat enough", metadata: { v: atLimit } as never },
        ctx,
      );
      expect(item.metadata).toEqual({ v: atLimit });
      const { hot } = await memory.recall("", ctx);
      expect(hot.map((t) => t.content)).toEqual(["flat enough"]);
      expect(hot[0]?.metadata).toEqual({ v: atLimit });
    });

    it("refuses calls on an ended context", async () => {
      const { memory } = await make();
      const ctx = ctxOf({ userId: "u1", sessionId: "s1" });
      ctx.cancel("user left");
      expect((await rejection(memory.store({ content: "x" }, ctx))).code).toBe(ErrorCode.CANCELLED);
    });

    // Only persistent stores promise this (their setup must then provide `reopen`); the case is
    // not defined at all for the others.
    if (options.persistent === true)
      it("keeps what was stored across a reopen (persistent stores)", async () => {
        const built = await make({ embed: wordEmbedder });
        if (built.reopen === undefined) throw new Error(`${label}: persistent setup needs reopen`);
        const ctx = ctxOf({ userId: "u1", sessionId: "s1" });
        await built.memory.store({ content: "remember me" }, ctx);
        await built.memory.store({ kind: "episode", content: "Berlin flight booked" }, ctx);
        const again = await built.reopen();
        open.push(again);
        const recall = await new TieredMemory({ store: again, embed: wordEmbedder }).recall(
          "berlin",
          ctx,
        );
        expect(recall.hot.map((t) => t.content)).toEqual(["remember me"]);
        expect(recall.cold[0]?.item.content).toBe("Berlin flight booked");
      });

    it("refuses use after close", async () => {
      const { memory } = await make();
      await memory.close();
      const ctx = ctxOf({ userId: "u1", sessionId: "s1" });
      await expect(memory.recall("", ctx)).rejects.toThrow(/closed/);
    });
  });
}
