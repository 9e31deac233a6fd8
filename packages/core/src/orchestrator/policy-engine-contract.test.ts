// Swappable means swappable: a PolicyEngine of the user's own that records nothing on the context
// (no events, no slots) gets the same answer from the orchestrator, through handle() and stream()
// and through the HTTP status table the bridges use, as the built-in engine making the same
// decisions. The built-in engine's decisions of each scenario are recorded, then replayed by a
// plain object.
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { ExecContext, type ExecContextOptions } from "../context/exec-context.js";
import { httpStatusOfResult, toHttpError } from "../http/status.js";
import { DeclarativePolicyEngine } from "../declarative-policy/declarative-engine.js";
import type { PolicyDocumentInit } from "../policy/document.js";
import { policyDelegation } from "../policy/decision.js";
import type { PolicyAction, PolicyDecision, PolicyEngine } from "../policy/types.js";
import type { Router } from "../router/types.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { FunctionToolManager, defineTool } from "../tools/function-tool-manager.js";
import { Orchestrator } from "./orchestrator.js";

interface Scenario {
  readonly name: string;
  readonly policy: PolicyDocumentInit;
  /** Messages sent one after the other (each names the handler that takes it). */
  readonly messages: readonly string[];
  readonly ctx?: ExecContextOptions;
}

const user: ExecContextOptions = { userId: "u1", sessionId: "s1" };

/** Routes "<handler> ..." to <handler>, without dropping what the context may not use. */
const firstWordRouter: Router = {
  classify: async (message) => {
    const name = message.split(" ")[0] as string;
    const best = { name, score: 1, reason: "first word" };
    return { candidates: [best], best };
  },
};

const SCENARIOS: readonly Scenario[] = [
  { name: "allow", policy: { version: 1 }, messages: ["plain hi"] },
  {
    name: "before_route: RATE_LIMITED",
    policy: {
      version: 1,
      rateLimits: [{ name: "per-user", per: "user", limit: 1, windowSeconds: 60 }],
    },
    messages: ["plain one", "plain two"],
  },
  {
    name: "before_invoke: PERMISSION_DENIED",
    policy: { version: 1 },
    messages: ["plain hi"],
    ctx: { ...user, permissions: { allowedAgents: ["other"] } },
  },
  {
    name: "before_invoke: POLICY_DENIED",
    policy: { version: 1, rules: [{ name: "no-plain", effect: "deny", names: ["plain"] }] },
    messages: ["plain hi"],
  },
  {
    name: "before_invoke: BUDGET_EXCEEDED",
    policy: {
      version: 1,
      budgets: [{ name: "daily", per: "user", maxTokens: 100, reserveTokens: 0 }],
    },
    messages: ["spender go", "plain hi"],
  },
  {
    name: "before_invoke: RATE_LIMITED",
    policy: {
      version: 1,
      rateLimits: [{ name: "plain-limit", per: "handler", limit: 1, windowSeconds: 60 }],
    },
    messages: ["plain one", "plain two"],
  },
  {
    name: "before_invoke: APPROVAL_PENDING",
    policy: {
      version: 1,
      approvals: [{ name: "gate", kind: "agent", names: ["plain"], approverRoles: ["boss"] }],
    },
    messages: ["plain hi"],
  },
  {
    name: "during_execution: POLICY_DENIED",
    policy: { version: 1, rules: [{ name: "no-t", effect: "deny", kind: "tool", names: ["t"] }] },
    messages: ["tool_user go"],
  },
  {
    name: "during_execution: PERMISSION_DENIED",
    policy: { version: 1 },
    messages: ["tool_user go"],
    ctx: { ...user, permissions: { allowedTools: [] } },
  },
  {
    name: "during_execution: BUDGET_EXCEEDED",
    policy: { version: 1, budgets: [{ name: "request", per: "request", maxTokens: 100 }] },
    messages: ["spender tool"],
  },
  {
    name: "during_execution: RATE_LIMITED",
    policy: {
      version: 1,
      rateLimits: [
        { name: "helper-limit", per: "handler", limit: 1, windowSeconds: 60, names: ["helper"] },
      ],
    },
    messages: ["delegator one", "delegator two"],
  },
  {
    name: "during_execution: APPROVAL_PENDING",
    policy: {
      version: 1,
      approvals: [{ name: "tool-gate", kind: "tool", names: ["t"], approverRoles: ["boss"] }],
    },
    messages: ["tool_user go"],
  },
];

const runtimes: InProcessRuntime[] = [];
afterEach(async () => {
  for (const r of runtimes.splice(0)) await r.close();
});

function app(policy: PolicyEngine): Orchestrator {
  const runtime = new InProcessRuntime({ delegationPolicy: policyDelegation(policy) });
  runtimes.push(runtime);
  const tools = new FunctionToolManager().register(
    defineTool({ name: "t", description: "A tool", parameters: z.object({}), run: () => "done" }),
  );
  const o = new Orchestrator({ router: firstWordRouter, runtime, tools, policy });
  const h = o.handler.bind(o);
  runtime.register("plain", async () => "plain answer");
  runtime.register("helper", async () => "helped");
  runtime.register(
    "tool_user",
    h(async (_i, _c, kit) => {
      const r = await kit.tools.call("t");
      return r.status === "success" ? "used the tool" : { status: "error", error: r.error };
    }),
  );
  runtime.register(
    "spender",
    h(async (input, ctx, kit) => {
      ctx.recordTokens({ promptTokens: 150 });
      if (!input.message.endsWith("tool")) return "spent";
      const r = await kit.tools.call("t");
      return r.status === "success" ? "spent and used" : { status: "error", error: r.error };
    }),
  );
  runtime.register(
    "delegator",
    h(async (_i, _c, kit) => {
      const r = await kit.delegate("helper", "help");
      return r.status === "success" ? `got ${r.output}` : { status: "error", error: r.error };
    }),
  );
  return o;
}

/** The HTTP answer a bridge gives for an outcome (request id left out: it differs per run). */
type Answer = { status: number; headers: Record<string, string>; body: unknown };

async function answerOf(run: () => Promise<unknown>): Promise<Answer> {
  try {
    const response = (await run()) as Parameters<typeof httpStatusOfResult>[0];
    return { status: httpStatusOfResult(response), headers: {}, body: response };
  } catch (err) {
    const { status, headers, body } = toHttpError(err, null);
    return { status, headers: { ...headers }, body };
  }
}

type Mode = "handle" | "stream";

async function play(scenario: Scenario, policy: PolicyEngine, mode: Mode): Promise<Answer[]> {
  const o = app(policy);
  const answers: Answer[] = [];
  for (const message of scenario.messages) {
    const ctx = ExecContext.create(scenario.ctx ?? user);
    answers.push(
      await answerOf(async () => {
        if (mode === "handle") return o.handle(message, ctx);
        const stream = o.stream(message, ctx);
        for await (const _chunk of stream) void _chunk;
        return stream.response;
      }),
    );
  }
  return answers;
}

/** The built-in engine, with every decision it makes written down. */
function recording(doc: PolicyDocumentInit) {
  const engine = new DeclarativePolicyEngine(doc);
  const log: { action: PolicyAction; decision: PolicyDecision }[] = [];
  const policy: PolicyEngine = {
    evaluate: async (action, ctx) => {
      const decision = await engine.evaluate(action, ctx);
      log.push({ action, decision });
      return decision;
    },
    charge: (usage, ctx) => engine.charge(usage, ctx),
  };
  return { policy, log };
}

/** A user's engine: plain objects, nothing recorded on the context. */
function replaying(log: readonly { action: PolicyAction; decision: PolicyDecision }[]) {
  let next = 0;
  const policy: PolicyEngine = {
    evaluate: async (action) => {
      const entry = log[next++];
      expect(action).toEqual(entry?.action);
      return { ...(entry?.decision as PolicyDecision) };
    },
    charge: async () => undefined,
  };
  return { policy, used: () => next };
}

describe("a PolicyEngine of your own gets the built-in engine's answers", () => {
  for (const scenario of SCENARIOS) {
    for (const mode of ["handle", "stream"] as const) {
      it(`${scenario.name} (${mode})`, async () => {
        const builtIn = recording(scenario.policy);
        const expected = await play(scenario, builtIn.policy, mode);
        const own = replaying(builtIn.log);
        const got = await play(scenario, own.policy, mode);
        expect(own.used()).toBe(builtIn.log.length);
        expect(got).toEqual(expected);
        // The scenario really produced the decision it is named after.
        const [checkpoint, code] = scenario.name.split(": ");
        const last = builtIn.log.at(-1)?.decision;
        if (code === undefined) {
          expect(expected.every((a) => a.status === 200)).toBe(true);
        } else {
          expect([last?.checkpoint, last?.code]).toEqual([checkpoint, code]);
        }
      });
    }
  }

  it("answers the HTTP statuses the bridges document for each refusal", async () => {
    const statuses: Record<string, number> = {};
    for (const scenario of SCENARIOS) {
      const builtIn = recording(scenario.policy);
      const last = (await play(scenario, builtIn.policy, "handle")).at(-1) as Answer;
      statuses[scenario.name] = last.status;
    }
    expect(statuses).toEqual({
      allow: 200,
      "before_route: RATE_LIMITED": 429,
      "before_invoke: PERMISSION_DENIED": 403,
      "before_invoke: POLICY_DENIED": 403,
      "before_invoke: BUDGET_EXCEEDED": 429,
      "before_invoke: RATE_LIMITED": 429,
      "before_invoke: APPROVAL_PENDING": 202,
      // A refused tool call the handler could not cope with: the agent failed (502), unless the
      // refusal is one the client can act on.
      "during_execution: POLICY_DENIED": 502,
      "during_execution: PERMISSION_DENIED": 502,
      "during_execution: BUDGET_EXCEEDED": 429,
      "during_execution: RATE_LIMITED": 429,
      "during_execution: APPROVAL_PENDING": 202,
    });
  });
});
