import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { ErrorCode } from "../errors.js";
import { Orchestrator } from "../orchestrator/orchestrator.js";
import { RuleRouter } from "../router/rule-router.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { DeclarativePolicyEngine } from "../declarative-policy/declarative-engine.js";
import type { PolicyDocumentInit } from "./document.js";
import type { PolicyAction } from "./types.js";

const runtimes: InProcessRuntime[] = [];
afterEach(async () => {
  for (const r of runtimes.splice(0)) await r.close();
});

/** An app whose one handler waits a turn (an LLM call in flight), then spends `tokens`. */
function burstApp(doc: PolicyDocumentInit, tokens: number) {
  const policy = new DeclarativePolicyEngine(doc);
  const runtime = new InProcessRuntime();
  runtimes.push(runtime);
  let spent = 0;
  runtime.register("writer", async (_input, ctx) => {
    await new Promise((r) => setImmediate(r));
    ctx.recordTokens({ promptTokens: tokens });
    spent += tokens;
    return "written";
  });
  const orchestrator = new Orchestrator({
    router: new RuleRouter({ rules: [], defaultHandler: "writer" }),
    runtime,
    policy,
  });
  const burst = async (n: number) => {
    const settled = await Promise.allSettled(
      Array.from({ length: n }, () =>
        orchestrator.handle("write", ExecContext.create({ userId: "u1" })),
      ),
    );
    const refused = settled.filter(
      (s) =>
        s.status === "rejected" &&
        (s.reason as { code?: string }).code === ErrorCode.BUDGET_EXCEEDED,
    ).length;
    const answered = settled.filter((s) => s.status === "fulfilled").length;
    return { answered, refused };
  };
  return { policy, burst, spent: () => spent };
}

const daily = (extra: Record<string, number> = {}): PolicyDocumentInit => ({
  version: 1,
  budgets: [{ name: "daily", per: "user", maxTokens: 1000, ...extra }],
});

describe("per-user budgets under concurrency", () => {
  it("lets a burst overspend by at most one reservation (20 × 400 tokens against 1,000)", async () => {
    const { burst, spent } = burstApp(daily({ reserveTokens: 400 }), 400);
    const { answered, refused } = await burst(20);
    // Before holds, all 20 were admitted (8,000 tokens spent against 1,000).
    expect(spent()).toBeLessThanOrEqual(1000 + 400);
    expect(answered).toBe(3); // holds of 0, 400, 800 admitted; 1,200 is over
    expect(refused).toBe(17);
    // Settled: the real usage was charged and the holds released; the user is out of budget.
    const { answered: later } = await burst(1);
    expect(later).toBe(0);
  });

  it("holds a tenth of maxTokens by default", async () => {
    const { burst, spent } = burstApp(daily(), 100);
    const { answered } = await burst(30);
    expect(answered).toBe(10);
    expect(spent()).toBe(1000);
  });

  it("holds nothing with reserveTokens: 0 (the old check-then-charge behaviour)", async () => {
    const { burst, spent } = burstApp(daily({ reserveTokens: 0 }), 400);
    await burst(5);
    expect(spent()).toBe(2000);
  });

  it("releases the holds of requests that ended, so sequential requests use the whole budget", async () => {
    const { burst, spent } = burstApp(daily({ reserveTokens: 400 }), 100);
    for (let i = 0; i < 10; i++) expect((await burst(1)).answered).toBe(1);
    expect(spent()).toBe(1000);
    expect((await burst(1)).refused).toBe(1);
  });

  it("property: a burst whose requests stay within the reservation spends at most max + reservation", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 100, max: 5000 }),
        fc.integer({ min: 1, max: 2000 }),
        fc.integer({ min: 0, max: 100 }),
        async (n, max, reserve, usePercent) => {
          const use = Math.floor((reserve * usePercent) / 100);
          const { burst, spent } = burstApp(
            {
              version: 1,
              budgets: [{ name: "b", per: "user", maxTokens: max, reserveTokens: reserve }],
            },
            use,
          );
          await burst(n);
          expect(spent()).toBeLessThanOrEqual(max + reserve);
          for (const r of runtimes.splice(0)) await r.close();
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe("Budgets as the engine keeps them", () => {
  const tool: PolicyAction = { checkpoint: "during_execution", kind: "tool", name: "search" };

  it("raises a request's hold to its real usage, which the others then see", async () => {
    const policy = new DeclarativePolicyEngine(daily({ reserveTokens: 100 }));
    const fresh = () => ExecContext.create({ userId: "u1" });
    const a = fresh();
    expect((await policy.evaluate(tool, a)).effect).toBe("allow");
    a.recordTokens({ promptTokens: 900 });
    // a's check sees its own 900 and raises its hold from 100 to 900.
    expect((await policy.evaluate(tool, a)).effect).toBe("allow");
    const b = fresh();
    b.recordTokens({ promptTokens: 100 });
    const refused = await policy.evaluate(tool, b);
    expect(refused.code).toBe(ErrorCode.BUDGET_EXCEEDED);
    expect(refused.reason).toBe(
      'Budget "daily" exhausted: user u1 used 1000 of 1000 tokens (900 of them held by requests still in flight).',
    );
    const c = fresh();
    expect((await policy.evaluate(tool, c)).effect).toBe("allow"); // holds 100: 1,000 held
    expect((await policy.evaluate(tool, fresh())).effect).toBe("deny");
    // a ends: its 900 are charged and its hold released; c still holds 100.
    await policy.charge(a.tokenUsage, a);
    expect((await policy.evaluate(tool, fresh())).effect).toBe("deny");
    await policy.charge(c.tokenUsage, c);
    expect((await policy.evaluate(tool, fresh())).effect).toBe("allow");
  });

  it("drops holds with the window they were taken in", async () => {
    const time = { now: 1_000_000 };
    const policy = new DeclarativePolicyEngine(
      {
        version: 1,
        budgets: [
          { name: "hourly", per: "user", maxTokens: 100, reserveTokens: 100, windowSeconds: 3600 },
        ],
      },
      { clock: () => time.now },
    );
    const stuck = ExecContext.create({ userId: "u1" });
    expect((await policy.evaluate(tool, stuck)).effect).toBe("allow");
    // A request that never ends holds the whole budget, until the window ends.
    expect((await policy.evaluate(tool, ExecContext.create({ userId: "u1" }))).effect).toBe("deny");
    time.now += 3_600_000;
    const next = ExecContext.create({ userId: "u1" });
    expect((await policy.evaluate(tool, next)).effect).toBe("allow");
    // Settling the old request later releases nothing from the new window.
    await policy.charge(stuck.tokenUsage, stuck);
    expect((await policy.evaluate(tool, ExecContext.create({ userId: "u1" }))).effect).toBe("deny");
  });

  it("refuses reservations on budgets they cannot apply to, naming the field", () => {
    expect(
      () =>
        new DeclarativePolicyEngine({
          version: 1,
          budgets: [{ name: "r", per: "request", maxTokens: 10, reserveTokens: 5 }],
        }),
    ).toThrow(
      /budgets\[0\]\.per: reserveTokens and reserveCostUsd apply to per: user budgets only/,
    );
    expect(
      () =>
        new DeclarativePolicyEngine({
          version: 1,
          budgets: [{ name: "u", per: "user", maxCostUsd: 1, reserveTokens: 5 }],
        }),
    ).toThrow(/budgets\[0\]\.reserveTokens: needs maxTokens/);
  });
});
