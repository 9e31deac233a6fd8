import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { DeclarativePolicyEngine } from "../declarative-policy/declarative-engine.js";
import { ErrorCode, NervaError } from "../errors.js";
import { toHttpError } from "../http/status.js";
import { RedisServerProcess } from "../internal/redis-server.test-support.js";
import { REDIS_URL, dropPrefixes, testPrefix } from "../runs/redis/redis.test-support.js";
import { describeLimitStoreContract } from "../testing/limit-store-contract.js";
import { Orchestrator } from "../orchestrator/orchestrator.js";
import { RuleRouter } from "../router/rule-router.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { parsePolicyDocument, type PolicyDocument } from "./document.js";
import { InMemoryLimitStore } from "./in-memory-limit-store.js";
import type { LimitStore } from "./limit-store.js";
import { RedisLimitStore } from "./redis-limit-store.js";
import { refusal } from "../testing/rejection.js";

const prefixes: string[] = [];
afterAll(() => dropPrefixes(prefixes));

describeLimitStoreContract("RedisLimitStore", async () => {
  const prefix = testPrefix("limits");
  prefixes.push(prefix);
  const open = () => new RedisLimitStore({ url: REDIS_URL, prefix: `${prefix}:` });
  return { store: open(), another: async () => open(), cleanup: () => dropPrefixes([prefix]) };
});

describeLimitStoreContract("InMemoryLimitStore", async () => {
  const store = new InMemoryLimitStore();
  return { store, another: async () => store };
});

// An implementation of the app's own (here a plain object over a Map-backed store) gets the same
// behaviour from the engine as the built-in ones.
describeLimitStoreContract("a custom LimitStore", async () => {
  const inner = new InMemoryLimitStore();
  const store: LimitStore = {
    admit: (a) => inner.admit(structuredClone(a)),
    settle: (s) => inner.settle(structuredClone(s)),
    close: async () => undefined,
  };
  return { store, another: async () => store };
});

describe("RedisLimitStore options", () => {
  it("refuses bad options with INVALID_OPTIONS naming the field", () => {
    const both = refusal(
      () => new RedisLimitStore({ url: REDIS_URL, client: new InMemoryLimitStore() as never }),
    );
    expect(both.code).toBe(ErrorCode.INVALID_OPTIONS);
    expect(both.message).toMatch(/client/);
    const prefix = refusal(() => new RedisLimitStore({ prefix: "has space" }));
    expect(prefix.message).toMatch(/prefix/);
    const extra = refusal(() => new RedisLimitStore({ urls: "x" } as never));
    expect(extra.message).toMatch(/urls/);
  });

  it("is refused by the engine when it is not a LimitStore", () => {
    const err = refusal(() => new DeclarativePolicyEngine({ version: 1 }, { limits: {} as never }));
    expect(err.code).toBe(ErrorCode.INVALID_OPTIONS);
    expect(err.message).toMatch(/limits/);
    const hold = refusal(() => new DeclarativePolicyEngine({ version: 1 }, { holdSeconds: 0 }));
    expect(hold.message).toMatch(/holdSeconds/);
  });

  it("applies a settlement sent twice once", async () => {
    const prefix = testPrefix("limits");
    prefixes.push(prefix);
    const limits = new RedisLimitStore({ url: REDIS_URL, prefix: `${prefix}:` });
    try {
      const ledger = { id: "daily:u1", windowMs: 60_000, maxTokens: 1000, maxCostUsd: null };
      const now = Date.now();
      const settle = { now, holdId: "h1", ledgers: [ledger], usage: { tokens: 600, costUsd: 0 } };
      await limits.settle(settle);
      await limits.settle({ ...settle, now: now + 10 });
      const probe = (tokens: number) =>
        limits.admit({
          now: now + 20,
          ledgers: [{ ...ledger, holdTokens: 0, holdCostUsd: 0 }],
          windows: [],
          usage: { tokens, costUsd: 0 },
          record: false,
          holdId: "p",
          holdExpiresAt: now + 30_000,
        });
      expect(await probe(399)).toEqual({ admitted: true });
      expect(await probe(400)).toMatchObject({ admitted: false, tokens: 1000 });
      // Another settlement of the same ledger is charged.
      await limits.settle({ ...settle, holdId: "h2" });
      expect(await probe(0)).toMatchObject({ admitted: false, tokens: 1200 });
    } finally {
      await limits.close();
    }
  });

  it("writes only under its prefix, every key with an expiry", async () => {
    const prefix = testPrefix("limits");
    prefixes.push(prefix);
    const limits = new RedisLimitStore({ url: REDIS_URL, prefix: `${prefix}:` });
    const admin = new Redis(REDIS_URL);
    try {
      const policy = new DeclarativePolicyEngine(
        {
          version: 1,
          rateLimits: [{ name: "per-user", per: "user", limit: 5, windowSeconds: 60 }],
          budgets: [{ name: "daily", per: "user", maxTokens: 1000 }],
        },
        { limits },
      );
      const ctx = ExecContext.create({ userId: "u:1{x}" });
      await policy.evaluate({ checkpoint: "before_route", message: "hi" }, ctx);
      await policy.evaluate({ checkpoint: "during_execution", kind: "tool", name: "t" }, ctx);
      await policy.charge(ctx.tokenUsage, ctx);
      const keys = (await admin.keys(`${prefix}:*`)).sort();
      expect(keys).toHaveLength(3);
      expect(keys[0]).toBe(`${prefix}:{limits}:b:daily:u%3A1%7Bx%7D`);
      expect(keys[2]).toBe(`${prefix}:{limits}:w:per-user:user:u%3A1%7Bx%7D`);
      for (const key of keys) expect(await admin.pttl(key)).toBeGreaterThan(0);
    } finally {
      await limits.close();
      admin.disconnect();
    }
  });
});

describe("RedisLimitStore with Redis away", () => {
  let server: RedisServerProcess;
  beforeAll(async () => {
    server = await RedisServerProcess.start();
  });
  afterAll(() => server.stop());

  const doc: PolicyDocument = parsePolicyDocument({
    version: 1,
    rateLimits: [{ name: "per-user", per: "user", limit: 100, windowSeconds: 60 }],
    budgets: [{ name: "daily", per: "user", maxTokens: 1000, reserveTokens: 100 }],
  });
  const tool = { checkpoint: "during_execution", kind: "tool", name: "search" } as const;

  async function eventually<T>(fn: () => Promise<T>, seconds: number): Promise<T> {
    const until = Date.now() + seconds * 1000;
    for (;;) {
      try {
        return await fn();
      } catch (err) {
        if (Date.now() > until) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  it("refuses checks with UNAVAILABLE in bounded time, keeps settlements, and recovers", async () => {
    const limits = new RedisLimitStore({ url: server.url, timeoutSeconds: 0.5 });
    const policy = new DeclarativePolicyEngine(doc, { limits });
    try {
      const ctx = ExecContext.create({ userId: "u1" });
      expect((await policy.evaluate(tool, ctx)).effect).toBe("allow");
      await server.stop();
      for (const action of [tool, { checkpoint: "before_route", message: "hi" } as const]) {
        const started = Date.now();
        const err = await policy
          .evaluate(action, ExecContext.create({ userId: "u1" }))
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(NervaError);
        expect((err as NervaError).code).toBe(ErrorCode.UNAVAILABLE);
        expect(Date.now() - started).toBeLessThan(1500);
      }
      // Through the orchestrator: a 503 the client may retry, with Retry-After, no internals.
      const runtime = new InProcessRuntime();
      runtime.register("echo", async () => "ok");
      const router = new RuleRouter({ rules: [], defaultHandler: "echo" });
      const orchestrator = new Orchestrator({ router, runtime, policy });
      const err = await orchestrator
        .handle("hi", ExecContext.create({ userId: "u1" }))
        .catch((e: unknown) => e);
      expect((err as NervaError).code).toBe(ErrorCode.UNAVAILABLE);
      const answer = toHttpError(err);
      expect(answer.status).toBe(503);
      expect(answer.headers["retry-after"]).toBe("1");
      expect(JSON.stringify(answer.body)).not.toMatch(/127\.0\.0\.1|ECONNREFUSED|ioredis/);
      // The request that ran ends while Redis is away: its charge is kept, not lost.
      ctx.recordTokens({ promptTokens: 1000 });
      await policy.charge(ctx.tokenUsage, ctx);
      // (Two: the request the orchestrator refused is settled too, with its zero usage.)
      expect(limits.pendingSettlements).toBe(2);
      await server.restart();
      await eventually(async () => expect(limits.pendingSettlements).toBe(0), 10);
      // A fresh server (no persistence): the kept charge is all the ledger holds, and it counts.
      const next = await policy.evaluate(tool, ExecContext.create({ userId: "u1" }));
      expect(next.code).toBe("BUDGET_EXCEEDED");
      expect(next.reason).toMatch(/used 1000 of 1000 tokens/);
    } finally {
      await limits.close();
      await server.restart().catch(() => undefined);
    }
  });

  it("takes one round trip per check, whatever the rules it touches", async () => {
    const limits = new RedisLimitStore({ url: server.url });
    const admin = new Redis(server.url);
    const calls = async () => {
      const info = await admin.info("commandstats");
      let n = 0;
      for (const m of info.matchAll(/cmdstat_(evalsha|eval):calls=(\d+)/g)) n += Number(m[2]);
      return n;
    };
    try {
      const policy = new DeclarativePolicyEngine(
        {
          ...doc,
          rateLimits: [
            ...doc.rateLimits,
            { name: "agents", per: "handler", limit: 100, windowSeconds: 60 },
            { name: "mine", per: "user_handler", limit: 100, windowSeconds: 60 },
          ],
        },
        { limits },
      );
      // Warm: each script is loaded once (EVALSHA, then EVAL on NOSCRIPT).
      const warm = ExecContext.create({ userId: "warm" });
      await policy.evaluate(tool, warm);
      await policy.charge(warm.tokenUsage, warm);
      const before = await calls();
      for (let i = 0; i < 10; i++) {
        const ctx = ExecContext.create({ userId: `u${i}` });
        await policy.evaluate({ checkpoint: "before_route", message: "hi" }, ctx);
        await policy.evaluate({ checkpoint: "before_invoke", kind: "agent", name: "a" }, ctx);
        await policy.charge(ctx.tokenUsage, ctx);
      }
      // The stats count the INFO calls too: only scripts are counted here.
      expect((await calls()) - before).toBe(30);
    } finally {
      await limits.close();
      admin.disconnect();
    }
  });
});
