// handle(message, ctx, { agent, args }): a call that names its handler skips the router and
// nothing else (middleware, policy before routing and before invocation, memory, charging).
import { describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import { TieredMemory } from "../memory/tiered-memory.js";
import type { Middleware } from "../middleware/types.js";
import type { PolicyAction, PolicyEngine } from "../policy/types.js";
import type { Router } from "../router/types.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { Orchestrator } from "./orchestrator.js";

function setup() {
  const routed: string[] = [];
  const asked: PolicyAction["checkpoint"][] = [];
  const stages: string[] = [];
  const router: Router = {
    classify: async (message) => {
      routed.push(message);
      const best = { name: "general", score: 1, reason: "always" };
      return { candidates: [best], best };
    },
  };
  const policy: PolicyEngine = {
    evaluate: async (action) => {
      asked.push(action.checkpoint);
      return { effect: "allow", checkpoint: action.checkpoint, code: null, reason: "", rule: null };
    },
    charge: async () => {},
  };
  const middleware: Middleware = {
    beforeRoute: (m) => (stages.push("before_route"), m),
    afterRoute: (r) => (stages.push(`after_route:${r.best?.name}`), r),
  };
  const runtime = new InProcessRuntime();
  runtime.register("general", async () => "general answer");
  runtime.register("billing", async (input) => `billing ${JSON.stringify(input.args)}`);
  const memory = new TieredMemory();
  const orchestrator = new Orchestrator({
    router,
    runtime,
    policy,
    memory,
    middleware: [middleware],
  });
  return { orchestrator, routed, asked, stages, memory };
}

describe("Orchestrator.handle with a named agent", () => {
  it("runs that agent with its args, skipping only the router", async () => {
    const { orchestrator, routed, asked, stages, memory } = setup();
    const ctx = ExecContext.create({ userId: "ada", sessionId: "s" });
    const answer = await orchestrator.handle("invoice 7", ctx, {
      agent: "billing",
      args: { id: "7" },
    });
    expect(answer).toMatchObject({
      status: "success",
      handler: "billing",
      text: 'billing {"id":"7"}',
    });
    expect(routed).toEqual([]);
    expect(stages).toEqual(["before_route", "after_route:billing"]);
    expect(asked).toEqual(["before_route", "before_invoke"]);
    const { hot } = await memory.recall({ tiers: ["hot"] }, ctx);
    expect(hot.map((t) => t.content)).toEqual(["invoice 7", 'billing {"id":"7"}']);
    // Without a name the router decides as before.
    expect((await orchestrator.handle("hi", ctx)).handler).toBe("general");
    expect(routed).toEqual(["hi"]);
  });

  it("streams the named agent too", async () => {
    const { orchestrator, routed } = setup();
    const chunks: string[] = [];
    const ctx = ExecContext.create({ userId: "ada" });
    for await (const c of orchestrator.stream("x", ctx, { agent: "billing" })) chunks.push(c);
    expect(chunks).toEqual(["billing {}"]);
    expect(routed).toEqual([]);
  });

  it("refuses an agent the context may not use, before anything runs", async () => {
    const { orchestrator, asked } = setup();
    const ctx = ExecContext.create({ userId: "ada", permissions: { allowedAgents: ["general"] } });
    const err = await orchestrator.handle("x", ctx, { agent: "billing" }).catch((e) => e);
    expect(err).toBeInstanceOf(NervaError);
    expect((err as NervaError).code).toBe(ErrorCode.PERMISSION_DENIED);
    expect((err as NervaError).message).toContain('"billing"');
    expect(asked).toEqual(["before_route"]);
  });

  it("refuses a bad agent name or args with INVALID_INPUT naming the field", async () => {
    const { orchestrator } = setup();
    const ctx = ExecContext.create();
    for (const [options, field] of [
      [{ agent: "" }, "agent"],
      [{ agent: "has space" }, "agent"],
      [{ agent: "billing", args: { n: 1 } }, "args.n"],
    ] as const) {
      const err = await orchestrator.handle("x", ctx, options as never).catch((e) => e);
      expect((err as NervaError).code).toBe(ErrorCode.INVALID_INPUT);
      expect((err as NervaError).message).toContain(field);
    }
  });
});
