import { afterEach, describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { DeclarativePolicyEngine } from "../declarative-policy/declarative-engine.js";
import type { PolicyDocumentInit } from "../policy/document.js";
import type { LimitAdmission, LimitLedger, LimitStore } from "../policy/limit-store.js";

/**
 * Builds a fresh, empty store for one test. `another` returns a second handle on the same state,
 * as another replica would open it (an in-memory store returns itself); `cleanup` runs after
 * the stores are closed (e.g. deletes the test's keys).
 */
export type LimitStoreContractSetup = () => Promise<{
  store: LimitStore;
  another: () => Promise<LimitStore>;
  cleanup?: () => Promise<void>;
}>;

const T0 = 1_800_000_000_000;
const TOOL = { checkpoint: "during_execution", kind: "tool", name: "search" } as const;
const ROUTE = { checkpoint: "before_route", message: "hi" } as const;

function admission(over: Partial<LimitAdmission>): LimitAdmission {
  return {
    now: T0,
    ledgers: [],
    windows: [],
    usage: { tokens: 0, costUsd: 0 },
    record: true,
    holdId: "h1",
    holdExpiresAt: T0 + 60_000,
    ...over,
  };
}

function ledger(over: Partial<LimitLedger> = {}): LimitLedger {
  return {
    id: "daily:u1",
    windowMs: 86_400_000,
    maxTokens: 1000,
    maxCostUsd: null,
    holdTokens: 400,
    holdCostUsd: 0,
    ...over,
  };
}

/**
 * The behaviour every {@link LimitStore} must show, directly and behind two
 * `DeclarativePolicyEngine`s sharing it: sliding windows per key, all-or-nothing admissions,
 * holds taken, raised, released on settle and freed when they expire, and bursts from two
 * engines that never pass a rate limit nor spend more than a budget plus one reservation.
 *
 * @example
 * describeLimitStoreContract("InMemoryLimitStore", async () => {
 *   const store = new InMemoryLimitStore();
 *   return { store, another: async () => store };
 * });
 */
export function describeLimitStoreContract(label: string, setup: LimitStoreContractSetup): void {
  describe(`limit store contract: ${label}`, () => {
    const open: LimitStore[] = [];
    const cleanups: (() => Promise<void>)[] = [];
    afterEach(async () => {
      for (const s of open.splice(0)) await s.close();
      for (const c of cleanups.splice(0)) await c();
    });
    const make = async () => {
      const built = await setup();
      open.push(built.store);
      if (built.cleanup !== undefined) cleanups.push(built.cleanup);
      const another = async () => {
        const s = await built.another();
        if (s !== built.store) open.push(s);
        return s;
      };
      return { store: built.store, another };
    };
    /** Two engines on two handles of one store, with one clock. */
    const engines = async (doc: PolicyDocumentInit) => {
      const { store, another } = await make();
      const clock = { now: T0 };
      const options = { clock: () => clock.now };
      const a = new DeclarativePolicyEngine(doc, { ...options, limits: store });
      const b = new DeclarativePolicyEngine(doc, { ...options, limits: await another() });
      return { a, b, clock };
    };

    it("slides each window and records neither refusals nor checks", async () => {
      const { store } = await make();
      const w = { id: "per-user:user:u1", limit: 2, windowMs: 1000 };
      const at = (now: number, record = true) =>
        store.admit(admission({ now, windows: [w], record }));
      expect(await at(T0)).toEqual({ admitted: true });
      expect(await at(T0 + 400, false)).toEqual({ admitted: true });
      expect(await at(T0 + 500)).toEqual({ admitted: true });
      expect(await at(T0 + 900)).toEqual({
        admitted: false,
        refusedBy: "window",
        index: 0,
        retryAfterMs: 100,
      });
      // The first admission leaves at T0 + 1000 and only it: the refusal was not recorded.
      expect(await at(T0 + 1000)).toEqual({ admitted: true });
      expect(await at(T0 + 1200)).toEqual({
        admitted: false,
        refusedBy: "window",
        index: 0,
        retryAfterMs: 300,
      });
      // Another key has its own window.
      expect(
        await store.admit(
          admission({ now: T0 + 1200, windows: [{ ...w, id: "per-user:user:u2" }] }),
        ),
      ).toEqual({ admitted: true });
    });

    it("admits all or nothing: a refused check takes no slot and no hold", async () => {
      const { store } = await make();
      const free = { id: "a:handler:x", limit: 1, windowMs: 60_000 };
      const full = { id: "b:handler:x", limit: 1, windowMs: 60_000 };
      expect(await store.admit(admission({ windows: [full] }))).toEqual({ admitted: true });
      const l = ledger();
      const refused = await store.admit(
        admission({ holdId: "r", ledgers: [l], windows: [free, full] }),
      );
      expect(refused).toMatchObject({ admitted: false, refusedBy: "window", index: 1 });
      expect(await store.admit(admission({ windows: [free] }))).toEqual({ admitted: true });
      // "r" holds nothing: another request's 999 tokens of usage still fit.
      const probe = admission({
        holdId: "p",
        ledgers: [l],
        usage: { tokens: 999, costUsd: 0 },
        record: false,
      });
      expect(await store.admit(probe)).toEqual({ admitted: true });
    });

    it("counts charged usage, others' holds and own usage against a ledger", async () => {
      const { store } = await make();
      const l = ledger({ holdTokens: 400 });
      for (const id of ["r1", "r2"])
        expect((await store.admit(admission({ holdId: id, ledgers: [l] }))).admitted).toBe(true);
      // r3: 800 held by others + its own 200 used.
      const third = await store.admit(
        admission({ holdId: "r3", ledgers: [l], usage: { tokens: 200, costUsd: 0 } }),
      );
      expect(third).toEqual({
        admitted: false,
        refusedBy: "ledger",
        index: 0,
        tokens: 1000,
        costUsd: 0,
        heldTokens: 800,
        retryAfterMs: 86_400_000,
      });
      // r1 raises its hold to its usage (400 of r2 + its own 500 fit): others see 500 + 400.
      const raised = ledger({ holdTokens: 500 });
      expect(
        await store.admit(
          admission({ holdId: "r1", ledgers: [raised], usage: { tokens: 500, costUsd: 0 } }),
        ),
      ).toEqual({ admitted: true });
      const fourth = await store.admit(
        admission({
          holdId: "r4",
          ledgers: [l],
          usage: { tokens: 100, costUsd: 0 },
          record: false,
        }),
      );
      expect(fourth).toMatchObject({ admitted: false, tokens: 1000, heldTokens: 900 });
      // Settling r1 (it used 300) and r2 (100): holds released, real usage charged.
      const settle = (holdId: string, tokens: number) =>
        store.settle({ now: T0 + 10, holdId, ledgers: [l], usage: { tokens, costUsd: 0 } });
      await settle("r1", 300);
      await settle("r2", 100);
      const after = await store.admit(
        admission({
          now: T0 + 20,
          holdId: "r5",
          ledgers: [l],
          usage: { tokens: 600, costUsd: 0 },
          record: false,
        }),
      );
      expect(after).toMatchObject({ admitted: false, tokens: 1000, heldTokens: 0 });
      expect(
        await store.admit(
          admission({
            now: T0 + 20,
            holdId: "r5",
            ledgers: [l],
            usage: { tokens: 599, costUsd: 0 },
          }),
        ),
      ).toEqual({ admitted: true });
    });

    it("keeps costs exactly and refuses at the cost limit", async () => {
      const { store } = await make();
      const l = ledger({
        id: "cost:u1",
        maxTokens: null,
        maxCostUsd: 1,
        holdTokens: 0,
        holdCostUsd: 0.25,
      });
      for (let i = 0; i < 4; i++)
        expect((await store.admit(admission({ holdId: `c${i}`, ledgers: [l] }))).admitted).toBe(
          true,
        );
      expect(await store.admit(admission({ holdId: "c4", ledgers: [l] }))).toMatchObject({
        admitted: false,
        refusedBy: "ledger",
        costUsd: 1,
      });
      await store.settle({
        now: T0 + 1,
        holdId: "c0",
        ledgers: [l],
        usage: { tokens: 0, costUsd: 0.1 },
      });
      expect(await store.admit(admission({ holdId: "c4", ledgers: [l], record: false }))).toEqual({
        admitted: true,
      });
      expect(
        await store.admit(
          admission({
            holdId: "c5",
            ledgers: [l],
            usage: { tokens: 0, costUsd: 0.15 },
            record: false,
          }),
        ),
      ).toMatchObject({ admitted: false, costUsd: 1 });
    });

    it("frees a hold when it expires, and a ledger when its window ends", async () => {
      const { store } = await make();
      const l = ledger({ windowMs: 10_000, holdTokens: 1000 });
      expect(
        await store.admit(admission({ holdId: "crashed", ledgers: [l], holdExpiresAt: T0 + 3000 })),
      ).toEqual({ admitted: true });
      const other = (now: number) =>
        store.admit(admission({ now, holdId: "next", ledgers: [l], holdExpiresAt: now + 1000 }));
      expect(await other(T0 + 2999)).toMatchObject({
        admitted: false,
        heldTokens: 1000,
        retryAfterMs: 7001,
      });
      // The process holding it never settles: at its expiry the budget is free again.
      expect(await other(T0 + 3000)).toEqual({ admitted: true });
      await store.settle({
        now: T0 + 3500,
        holdId: "next",
        ledgers: [l],
        usage: { tokens: 999, costUsd: 0 },
      });
      expect(
        await store.admit(
          admission({
            now: T0 + 9000,
            holdId: "x",
            ledgers: [l],
            usage: { tokens: 1, costUsd: 0 },
            record: false,
          }),
        ),
      ).toMatchObject({ admitted: false, tokens: 1000 });
      expect(
        await store.admit(
          admission({ now: T0 + 10_000, holdId: "x", ledgers: [l], record: false }),
        ),
      ).toEqual({ admitted: true });
    });

    it("limits per user across two engines", async () => {
      const { a, b, clock } = await engines({
        version: 1,
        rateLimits: [{ name: "per-user", per: "user", limit: 2, windowSeconds: 60 }],
      });
      const route = (engine: DeclarativePolicyEngine, userId: string) =>
        engine.evaluate(ROUTE, ExecContext.create({ userId }));
      expect((await route(a, "u1")).effect).toBe("allow");
      expect((await route(b, "u1")).effect).toBe("allow");
      const third = await route(a, "u1");
      expect(third.code).toBe("RATE_LIMITED");
      expect(third.retryAfterSeconds).toBe(60);
      expect((await route(b, "u2")).effect).toBe("allow");
      clock.now += 60_000;
      expect((await route(b, "u1")).effect).toBe("allow");
    });

    it("never lets a burst from two engines past a rate limit", async () => {
      const { a, b } = await engines({
        version: 1,
        rateLimits: [
          { name: "per-user", per: "user", limit: 10, windowSeconds: 60 },
          { name: "flights", per: "handler", names: ["flight_*"], limit: 7, windowSeconds: 60 },
        ],
      });
      const decisions = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          (i % 2 === 0 ? a : b).evaluate(ROUTE, ExecContext.create({ userId: "u1" })),
        ),
      );
      expect(decisions.filter((d) => d.effect === "allow")).toHaveLength(10);
      const agent = { checkpoint: "before_invoke", kind: "agent", name: "flight_agent" } as const;
      const invoked = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          (i % 2 === 0 ? a : b).evaluate(agent, ExecContext.create({ userId: `u${i}` })),
        ),
      );
      expect(invoked.filter((d) => d.effect === "allow")).toHaveLength(7);
    });

    it("never lets a burst from two engines spend more than a budget plus one reservation", async () => {
      const { a, b } = await engines({
        version: 1,
        budgets: [{ name: "daily", per: "user", maxTokens: 1000, reserveTokens: 300 }],
      });
      const burst = Array.from({ length: 20 }, (_, i) => ({
        engine: i % 2 === 0 ? a : b,
        ctx: ExecContext.create({ userId: "u1" }),
      }));
      const decisions = await Promise.all(
        burst.map(({ engine, ctx }) => engine.evaluate(TOOL, ctx)),
      );
      const admitted = burst.filter((_, i) => decisions[i]?.effect === "allow");
      // Held when each was admitted: 0, 300, 600, 900 < 1000.
      expect(admitted).toHaveLength(4);
      expect(decisions.find((d) => d.effect !== "allow")?.code).toBe("BUDGET_EXCEEDED");
      for (const { engine, ctx } of admitted) {
        ctx.recordTokens({ promptTokens: 300 });
        await engine.charge(ctx.tokenUsage, ctx);
      }
      // 1,200 spent: the limit plus one reservation at most. Nothing is held any more.
      const next = await b.evaluate(TOOL, ExecContext.create({ userId: "u1" }));
      expect(next.code).toBe("BUDGET_EXCEEDED");
      expect(next.reason).toBe('Budget "daily" exhausted: user u1 used 1200 of 1000 tokens.');
    });

    it("releases holds on charge and frees a hold its engine never settles", async () => {
      const doc: PolicyDocumentInit = {
        version: 1,
        budgets: [{ name: "daily", per: "user", maxTokens: 1000, reserveTokens: 1000 }],
      };
      const { store, another } = await make();
      const clock = { now: T0 };
      const a = new DeclarativePolicyEngine(doc, {
        limits: store,
        clock: () => clock.now,
        holdSeconds: 30,
      });
      const b = new DeclarativePolicyEngine(doc, {
        limits: await another(),
        clock: () => clock.now,
        holdSeconds: 30,
      });
      const first = ExecContext.create({ userId: "u1" });
      expect((await a.evaluate(TOOL, first)).effect).toBe("allow");
      expect((await b.evaluate(TOOL, ExecContext.create({ userId: "u1" }))).code).toBe(
        "BUDGET_EXCEEDED",
      );
      first.recordTokens({ promptTokens: 100 });
      await a.charge(first.tokenUsage, first);
      const second = ExecContext.create({ userId: "u1" });
      expect((await b.evaluate(TOOL, second)).effect).toBe("allow");
      // `second`'s engine dies: nobody charges it. Its hold lasts holdSeconds after its last check.
      clock.now += 29_999;
      expect((await a.evaluate(TOOL, ExecContext.create({ userId: "u1" }))).code).toBe(
        "BUDGET_EXCEEDED",
      );
      clock.now += 1;
      expect((await a.evaluate(TOOL, ExecContext.create({ userId: "u1" }))).effect).toBe("allow");
    });
  });
}
