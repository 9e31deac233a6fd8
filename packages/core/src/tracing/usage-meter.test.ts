import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { runWork as run, workAt } from "./work-tree.test-support.js";
import { isNervaError } from "../errors.js";
import { Orchestrator } from "../orchestrator/orchestrator.js";
import { RuleRouter } from "../router/rule-router.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { UsageMeter, type UserUsage } from "./usage-meter.js";

const request = fc.record({
  user: fc.constantFrom<string | null>("alice", "bob", "карл", null),
  // A request continued from another process (e.g. a durable run): its root has a remote parent.
  remote: fc.boolean(),
  work: workAt(3),
});

function contextFor(user: string | null, remote: boolean, meter: UsageMeter): ExecContext {
  if (!remote) return ExecContext.create({ userId: user ?? undefined, traceSink: meter });
  const there = ExecContext.create({ userId: user ?? undefined });
  const span = there.startSpan("enqueue");
  const wire = there.fork({ span }).toWire();
  span.end();
  return ExecContext.fromWire(wire, { traceSink: meter });
}

describe("UsageMeter", () => {
  it("per-user totals = the sum of those users' ctx.tokenUsage, with concurrent requests", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(request, { minLength: 1, maxLength: 8 }), async (requests) => {
        const meter = new UsageMeter();
        const done = await Promise.all(
          requests.map(async (r) => {
            const ctx = contextFor(r.user, r.remote, meter);
            await run(r.work, ctx, "handle");
            return { user: r.user, usage: ctx.tokenUsage };
          }),
        );
        const expected = new Map<string | null, UserUsage>();
        for (const { user, usage } of done) {
          const e = expected.get(user);
          expected.set(user, {
            userId: user,
            requests: (e?.requests ?? 0) + 1,
            inputTokens: (e?.inputTokens ?? 0) + usage.promptTokens,
            outputTokens: (e?.outputTokens ?? 0) + usage.completionTokens,
            costUsd: (e?.costUsd ?? 0) + usage.costUsd,
          });
        }
        expect(meter.users()).toHaveLength(expected.size);
        for (const [user, e] of expected) {
          const got = meter.byUser(user)!;
          expect(got).toMatchObject({
            userId: user,
            requests: e.requests,
            inputTokens: e.inputTokens,
            outputTokens: e.outputTokens,
          });
          expect(got.costUsd).toBeCloseTo(e.costUsd, 9);
        }
      }),
      { numRuns: 120 },
    );
  });

  it("meters real requests through the orchestrator, including delegated usage", async () => {
    const meter = new UsageMeter();
    const runtime = new InProcessRuntime();
    runtime.register("main", async (_input, ctx, rt) => {
      ctx.recordTokens({ promptTokens: 100, completionTokens: 20, costUsd: 0.01 });
      await rt.delegate("helper", { message: "help" }, ctx);
      return "done";
    });
    runtime.register("helper", (_input, ctx) => {
      ctx.recordTokens({ promptTokens: 7, completionTokens: 3, costUsd: 0.001 });
      return "helped";
    });
    const orchestrator = new Orchestrator({
      router: new RuleRouter({ rules: [], defaultHandler: "main" }),
      runtime,
    });
    for (const userId of ["u1", "u1", undefined]) {
      const ctx = ExecContext.create({ userId, traceSink: meter });
      expect((await orchestrator.handle("hi", ctx)).status).toBe("success");
      ctx.dispose();
    }
    expect(meter.byUser("u1")).toEqual({
      userId: "u1",
      requests: 2,
      inputTokens: 214,
      outputTokens: 46,
      costUsd: expect.closeTo(0.022, 9) as number,
    });
    expect(meter.byUser(null)).toMatchObject({ requests: 1, inputTokens: 107, outputTokens: 23 });
    expect(meter.byUser("nobody")).toBeUndefined();
    expect(meter.users().map((u) => u.userId)).toEqual(["u1", null]);
    expect(Object.isFrozen(meter.byUser("u1"))).toBe(true);
  });

  it("keeps at most maxUsers, evicting the least recently active one", () => {
    const meter = new UsageMeter({ maxUsers: 3 });
    const spend = (userId: string, cents: number): void => {
      const ctx = ExecContext.create({ userId, traceSink: meter });
      const span = ctx.startSpan("handle");
      ctx.fork({ span }).recordTokens({ promptTokens: 1, costUsd: cents / 100 });
      span.end();
    };
    spend("a", 1);
    spend("b", 5);
    spend("c", 3);
    spend("a", 1); // a is now the most recent; b the least
    spend("d", 2);
    expect(meter.byUser("b")).toBeUndefined();
    expect(meter.evictedUsers).toBe(1);
    expect(meter.users().map((u) => [u.userId, u.requests])).toEqual([
      ["c", 1],
      ["a", 2], // same cost as d, more requests
      ["d", 1],
    ]);
    for (let i = 0; i < 100; i++) spend(`x${i}`, 1);
    expect(meter.users()).toHaveLength(3);
    expect(meter.evictedUsers).toBe(101);
    meter.reset();
    expect(meter.users()).toEqual([]);
    expect(meter.evictedUsers).toBe(0);
  });

  it("counts only local roots: a span under another span of this process is not a request", () => {
    const meter = new UsageMeter();
    const ctx = ExecContext.create({ userId: "u", traceSink: meter });
    const root = ctx.startSpan("handle");
    const inner = ctx.fork({ span: root }).startSpan("tools.call");
    ctx.fork({ span: inner }).recordTokens({ promptTokens: 5, completionTokens: 1 });
    inner.end();
    expect(meter.byUser("u")).toBeUndefined();
    root.end();
    expect(meter.byUser("u")).toMatchObject({ requests: 1, inputTokens: 5, outputTokens: 1 });
  });

  it("rejects bad options with INVALID_OPTIONS and a bad user id with INVALID_INPUT", () => {
    for (const bad of [{ maxUsers: 0 }, { maxUsers: 1.5 }, { maxUsers: "10" }, { max: 1 }]) {
      try {
        new UsageMeter(bad as never);
        expect.unreachable();
      } catch (err) {
        expect(isNervaError(err) && err.code).toBe("INVALID_OPTIONS");
        expect((err as Error).message).toMatch(/options/);
      }
    }
    expect(() => new UsageMeter().byUser(42 as never)).toThrow(/Invalid userId/);
  });
});
