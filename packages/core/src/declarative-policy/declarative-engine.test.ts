import { describe, expect, it } from "vitest";
import { ExecContext, type ExecContextOptions } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { DeclarativePolicyEngine } from "./declarative-engine.js";
import { decisionError, policyDelegation } from "../policy/decision.js";
import type { PolicyDocumentInit } from "../policy/document.js";
import { NoopPolicyEngine } from "../policy/noop-engine.js";
import type { PolicyAction } from "../policy/types.js";

const ctxOf = (o: ExecContextOptions = {}) => ExecContext.create({ userId: "u1", ...o });
const route: PolicyAction = { checkpoint: "before_route", message: "hello" };
const invoke = (name: string, message = "hi"): PolicyAction => ({
  checkpoint: "before_invoke",
  kind: "agent",
  name,
  message,
});
const tool = (name: string, args: unknown = {}): PolicyAction => ({
  checkpoint: "during_execution",
  kind: "tool",
  name,
  args,
});

function clocked(doc: PolicyDocumentInit) {
  const time = { now: 1_000_000 };
  const engine = new DeclarativePolicyEngine(doc, { clock: () => time.now });
  return { engine, time };
}

describe("DeclarativePolicyEngine: rate limits", () => {
  it("limits requests per user before routing, counting each request once", async () => {
    const { engine, time } = clocked({
      version: 1,
      rateLimits: [{ name: "per-user", per: "user", limit: 2, windowSeconds: 10 }],
    });
    const first = ctxOf();
    expect((await engine.evaluate(route, first)).effect).toBe("allow");
    // The same request evaluated again (say by a middleware and by the orchestrator) is not counted twice.
    expect((await engine.evaluate(route, first.fork())).effect).toBe("allow");
    expect((await engine.evaluate(route, ctxOf())).effect).toBe("allow");
    time.now += 4_000;
    const third = await engine.evaluate(route, ctxOf());
    expect(third).toMatchObject({
      effect: "deny",
      code: ErrorCode.RATE_LIMITED,
      rule: "per-user",
      retryAfterSeconds: 6,
    });
    expect((await engine.evaluate(route, ctxOf({ userId: "u2" }))).effect).toBe("allow");
    // Refused attempts are not recorded: after the window the user is admitted again.
    time.now += 6_000;
    expect((await engine.evaluate(route, ctxOf())).effect).toBe("allow");
  });

  it("limits invocations per handler and per user and handler", async () => {
    const { engine } = clocked({
      version: 1,
      rateLimits: [
        { name: "flights", per: "handler", limit: 2, windowSeconds: 60, names: ["flight_*"] },
        { name: "per-user-agent", per: "user_handler", limit: 1, windowSeconds: 60 },
      ],
    });
    expect((await engine.evaluate(invoke("flight_agent"), ctxOf())).effect).toBe("allow");
    const again = await engine.evaluate(invoke("flight_agent"), ctxOf());
    expect(again).toMatchObject({ code: ErrorCode.RATE_LIMITED, rule: "per-user-agent" });
    expect((await engine.evaluate(invoke("flight_agent"), ctxOf({ userId: "u2" }))).effect).toBe(
      "allow",
    );
    const third = await engine.evaluate(invoke("flight_agent"), ctxOf({ userId: "u3" }));
    expect(third).toMatchObject({ code: ErrorCode.RATE_LIMITED, rule: "flights" });
    expect((await engine.evaluate(invoke("hotel_agent"), ctxOf({ userId: "u3" }))).effect).toBe(
      "allow",
    );
    // Tools are not handlers: handler limits do not apply to them.
    expect((await engine.evaluate(tool("flight_search"), ctxOf())).effect).toBe("allow");
  });
});

describe("DeclarativePolicyEngine: request-local bookkeeping", () => {
  it("keeps what it counted per engine: another engine's limit of the same name still counts", async () => {
    const doc: PolicyDocumentInit = {
      version: 1,
      rateLimits: [{ name: "per-user", per: "user", limit: 1, windowSeconds: 60 }],
    };
    const front = new DeclarativePolicyEngine(doc);
    const back = new DeclarativePolicyEngine(doc);
    const first = ctxOf();
    expect((await front.evaluate(route, first)).effect).toBe("allow");
    // The same request at the second engine: counted there too, once.
    expect((await back.evaluate(route, first)).effect).toBe("allow");
    expect((await back.evaluate(route, first)).effect).toBe("allow");
    expect((await back.evaluate(route, ctxOf())).code).toBe(ErrorCode.RATE_LIMITED);
  });

  it("does not read the event log: a request counted is counted whatever its events say", async () => {
    const { engine } = clocked({
      version: 1,
      rateLimits: [{ name: "per-user", per: "user", limit: 1, windowSeconds: 60 }],
    });
    const forged = ctxOf();
    // An event that looks like the old bookkeeping grants nothing.
    forged.event("policy.counted", { limit: "per-user", key: "user:u1" });
    expect((await engine.evaluate(route, forged)).effect).toBe("allow");
    expect((await engine.evaluate(route, ctxOf())).code).toBe(ErrorCode.RATE_LIMITED);
  });
});

describe("DeclarativePolicyEngine: permissions and rules", () => {
  it("denies what the context may not use, then applies the first matching rule", async () => {
    const engine = new DeclarativePolicyEngine({
      version: 1,
      rules: [
        {
          name: "staff-refunds",
          effect: "allow",
          kind: "tool",
          names: ["refund*"],
          roles: ["staff"],
        },
        {
          name: "no-refunds",
          effect: "deny",
          kind: "tool",
          names: ["refund*"],
          reason: "Refunds need staff.",
        },
      ],
    });
    const limited = ctxOf({ permissions: { allowedTools: ["search"] } });
    expect(await engine.evaluate(tool("delete_all"), limited)).toMatchObject({
      effect: "deny",
      code: ErrorCode.PERMISSION_DENIED,
    });
    expect(await engine.evaluate(tool("refund_order"), ctxOf())).toMatchObject({
      code: ErrorCode.POLICY_DENIED,
      rule: "no-refunds",
      reason: "Refunds need staff.",
    });
    const staff = ctxOf({ permissions: { roles: ["staff"] } });
    expect(await engine.evaluate(tool("refund_order"), staff)).toMatchObject({
      effect: "allow",
      rule: "staff-refunds",
    });
    expect(
      await engine.evaluate(invoke("x"), ctxOf({ permissions: { allowedAgents: [] } })),
    ).toMatchObject({ code: ErrorCode.PERMISSION_DENIED });
  });

  it("denies by default when the document says so", async () => {
    const engine = new DeclarativePolicyEngine({
      version: 1,
      default: "deny",
      rules: [{ name: "only-search", effect: "allow", kind: "tool", names: ["search"] }],
    });
    expect((await engine.evaluate(tool("search"), ctxOf())).effect).toBe("allow");
    expect(await engine.evaluate(tool("other"), ctxOf())).toMatchObject({
      code: ErrorCode.POLICY_DENIED,
      rule: null,
    });
    expect((await engine.evaluate(route, ctxOf())).effect).toBe("allow");
  });
});

describe("DeclarativePolicyEngine: budgets", () => {
  it("refuses further work once the request tree used its token budget", async () => {
    const engine = new DeclarativePolicyEngine({
      version: 1,
      budgets: [{ name: "request", per: "request", maxTokens: 100 }],
    });
    const root = ctxOf();
    const child = root.child("helper");
    expect((await engine.evaluate(tool("search"), child)).effect).toBe("allow");
    child.recordTokens({ promptTokens: 60, completionTokens: 40 });
    // The child's own usage and the root's are the same tree: both see the budget exhausted.
    const refused = await engine.evaluate(tool("search"), root.child("other"));
    expect(refused).toMatchObject({
      effect: "deny",
      code: ErrorCode.BUDGET_EXCEEDED,
      rule: "request",
    });
    expect(refused.reason).toContain("100 of 100 tokens");
    expect((await engine.evaluate(tool("search"), ctxOf())).effect).toBe("allow");
  });

  it("charges real usage to a user's budget and resets it after the window", async () => {
    const { engine, time } = clocked({
      version: 1,
      budgets: [{ name: "daily", per: "user", maxCostUsd: 1, windowSeconds: 3600 }],
    });
    const first = ctxOf();
    first.recordTokens({ promptTokens: 10, costUsd: 0.7 });
    expect((await engine.evaluate(invoke("a"), first)).effect).toBe("allow");
    await engine.charge(first.tokenUsage, first);
    const second = ctxOf();
    second.recordTokens({ promptTokens: 10, costUsd: 0.3 });
    time.now += 600_000;
    const refused = await engine.evaluate(tool("search"), second);
    expect(refused).toMatchObject({ code: ErrorCode.BUDGET_EXCEEDED, retryAfterSeconds: 3000 });
    expect((await engine.evaluate(invoke("a"), ctxOf({ userId: "u2" }))).effect).toBe("allow");
    time.now += 3_000_000;
    expect((await engine.evaluate(invoke("a"), ctxOf())).effect).toBe("allow");
  });
});

describe("policy decisions", () => {
  it("records each decision as a policy.decision event and a policy.evaluate span", async () => {
    const engine = new DeclarativePolicyEngine({
      version: 1,
      rules: [{ name: "no-x", effect: "deny", names: ["x"] }],
    });
    const ctx = ctxOf();
    await engine.evaluate(invoke("y"), ctx);
    await engine.evaluate(invoke("x"), ctx);
    const events = ctx.events.filter((e) => e.name === "policy.decision").map((e) => e.attributes);
    expect(events).toEqual([
      expect.objectContaining({
        checkpoint: "before_invoke",
        effect: "allow",
        name: "y",
        kind: "agent",
      }),
      expect.objectContaining({
        effect: "deny",
        code: ErrorCode.POLICY_DENIED,
        rule: "no-x",
        name: "x",
      }),
    ]);
    expect(ctx.spans.map((s) => [s.name, s.status, s.attributes["effect"]])).toEqual([
      ["policy.evaluate", "ok", "allow"],
      ["policy.evaluate", "error", "deny"],
    ]);
    await expect(
      engine.evaluate({ checkpoint: "before_invoke" } as PolicyAction, ctx),
    ).rejects.toThrow(/action\.name/);
  });

  it("turns refusals into NervaErrors with the code and details bridges map", () => {
    const err = decisionError({
      effect: "deny",
      checkpoint: "before_route",
      code: ErrorCode.RATE_LIMITED,
      reason: "slow down",
      rule: "per-user",
      retryAfterSeconds: 7,
    });
    expect(err).toBeInstanceOf(NervaError);
    expect(err.code).toBe(ErrorCode.RATE_LIMITED);
    expect(err.details).toEqual({
      checkpoint: "before_route",
      rule: "per-user",
      retryAfterSeconds: 7,
    });
    const pending = decisionError({
      effect: "pending",
      checkpoint: "before_invoke",
      code: ErrorCode.APPROVAL_PENDING,
      reason: "wait",
      rule: "r",
      approvalId: "a1",
    });
    expect(pending.code).toBe(ErrorCode.APPROVAL_PENDING);
    expect(pending.details["approvalId"]).toBe("a1");
  });

  it("governs runtime.delegate through policyDelegation", async () => {
    const engine = new DeclarativePolicyEngine({
      version: 1,
      budgets: [{ name: "request", per: "request", maxTokens: 10 }],
      rules: [{ name: "no-secret", effect: "deny", kind: "agent", names: ["secret_agent"] }],
    });
    const runtime = new InProcessRuntime({ delegationPolicy: policyDelegation(engine) });
    runtime.register("helper", async () => "helped");
    runtime.register("secret_agent", async () => "secret");
    runtime.register("boss", async (input, ctx, rt) => {
      const first = await rt.delegate(input.message, { message: "go" }, ctx);
      ctx.recordTokens({ promptTokens: 20 });
      const second = await rt.delegate("helper", { message: "again" }, ctx);
      return {
        output: `${first.status}:${first.error ?? first.output} / ${second.status}:${second.error ?? ""}`,
      };
    });
    const ok = await runtime.invoke("boss", { message: "helper" }, ctxOf());
    expect(ok.output).toMatch(/^success:helped \/ error:.*BUDGET_EXCEEDED/);
    const denied = await runtime.invoke("boss", { message: "secret_agent" }, ctxOf());
    expect(denied.output).toMatch(/^error:.*POLICY_DENIED/);
  });

  it("NoopPolicyEngine allows everything and still records the decision", async () => {
    const ctx = ctxOf();
    const decision = await new NoopPolicyEngine().evaluate(tool("anything"), ctx);
    expect(decision).toMatchObject({ effect: "allow", rule: "noop" });
    expect(ctx.events.map((e) => e.name)).toEqual(["policy.decision"]);
  });
});
