import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { ExecContext, type ExecContextOptions } from "../context/exec-context.js";
import { ErrorCode } from "../errors.js";
import { SqliteMemoryStore } from "../memory/sqlite-memory-store.js";
import { TieredMemory } from "../memory/tiered-memory.js";
import { LoggingMiddleware } from "../middleware/logging.js";
import { MetricsMiddleware } from "../middleware/metrics.js";
import { DeclarativePolicyEngine } from "../declarative-policy/declarative-engine.js";
import { policyDelegation } from "../policy/decision.js";
import { SqliteRegistry } from "../registry/sqlite-registry.js";
import { RuleRouter } from "../router/rule-router.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { FunctionToolManager, defineTool } from "../tools/function-tool-manager.js";
import { Orchestrator } from "./orchestrator.js";
import { rejection } from "../testing/rejection.js";

const dir = mkdtempSync(join(tmpdir(), "nerva-e2e-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

const BASE_POLICY = `
version: 1
rules:
  - name: refunds-need-staff
    effect: deny
    kind: tool
    names: ["issue_refund"]
    unlessRoles: [staff]
    reason: Only staff may issue refunds.
approvals:
  - name: account-deletion
    kind: agent
    names: [delete_account_agent]
    approverRoles: [manager]
rateLimits:
  - name: per-user
    per: user
    limit: 50
    windowSeconds: 60
budgets:
  - name: per-request
    per: request
    maxTokens: 1000
`;

interface App {
  orchestrator: Orchestrator;
  policy: DeclarativePolicyEngine;
  registry: SqliteRegistry;
  memory: TieredMemory;
  metrics: MetricsMiddleware;
  logs: string[];
  counters: { refunds: number; deletions: number; searches: number };
  memoryPath: string;
}

const apps: App[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.orchestrator.close();
});

async function makeApp(policyYaml = BASE_POLICY, memoryPath?: string): Promise<App> {
  const n = ++files;
  const policyPath = join(dir, `policy-${n}.yaml`);
  writeFileSync(policyPath, policyYaml);
  const policy = await DeclarativePolicyEngine.fromFile(policyPath);
  const path = memoryPath ?? join(dir, `memory-${n}.db`);
  const memory = new TieredMemory({ store: new SqliteMemoryStore({ path }) });
  const registry = new SqliteRegistry({ path: join(dir, `registry-${n}.db`) });
  const metrics = new MetricsMiddleware();
  const logs: string[] = [];
  const counters = { refunds: 0, deletions: 0, searches: 0 };
  const tools = new FunctionToolManager()
    .register(
      defineTool({
        name: "search_flights",
        description: "Finds flights to a city",
        parameters: z.object({ to: z.string() }),
        run: ({ to }) => {
          counters.searches++;
          return [`LH${100 + counters.searches} to ${to}`];
        },
      }),
    )
    .register(
      defineTool({
        name: "calendar",
        description: "Finds a free slot",
        parameters: z.object({ when: z.string() }),
        run: ({ when }) => `${when} 10:00`,
      }),
    )
    .register(
      defineTool({
        name: "issue_refund",
        description: "Refunds an order",
        parameters: z.object({ order: z.string() }),
        run: ({ order }) => {
          counters.refunds++;
          return `refunded ${order}`;
        },
      }),
    );
  const runtime = new InProcessRuntime({
    timeoutSeconds: 5,
    delegationPolicy: policyDelegation(policy),
  });
  const router = new RuleRouter({
    rules: [
      { handler: "story_agent", keywords: ["story"] },
      { handler: "travel_agent", keywords: ["trip"] },
      { handler: "refund_agent", keywords: ["refund"] },
      { handler: "delete_account_agent", pattern: "delete my account" },
      { handler: "essay_agent", keywords: ["essay"] },
      { handler: "profile_agent", keywords: ["name"] },
    ],
    defaultHandler: "smalltalk",
  });
  const orchestrator = new Orchestrator({
    router,
    runtime,
    tools,
    memory,
    registry,
    policy,
    middleware: [new LoggingMiddleware({ write: (l) => void logs.push(l) }), metrics],
  });
  const h = orchestrator.handler.bind(orchestrator);

  runtime.register("smalltalk", async () => "Hello!");
  runtime.register("story_agent", async function* (input) {
    for (const word of ["Once", " upon", " a", " time"]) yield word;
    void input;
  });
  runtime.register(
    "travel_agent",
    h(async (input, ctx, kit) => {
      ctx.recordTokens({ promptTokens: 50, completionTokens: 10, costUsd: 0.001 });
      const flight = await kit.delegate("flight_agent", `flights for: ${input.message}`);
      return `Trip planned. ${flight.output}`;
    }),
  );
  runtime.register(
    "flight_agent",
    h(async (_input, _ctx, kit) => {
      const flights = await kit.tools.call("search_flights", { to: "BER" });
      const slot = await kit.delegate("calendar_agent", "next Tuesday");
      return `Flights ${JSON.stringify(flights.output)}, leaving ${slot.output}.`;
    }),
  );
  runtime.register(
    "calendar_agent",
    h(async (input, ctx, kit) => {
      const slot = await kit.tools.call("calendar", { when: input.message });
      return `${String(slot.output)} (depth ${ctx.depth})`;
    }),
  );
  runtime.register(
    "refund_agent",
    h(async (_input, _ctx, kit) => {
      const refund = await kit.tools.call("issue_refund", { order: "A-17" });
      // A typed refusal: its code makes the text client-facing (see clientError).
      if (refund.status !== "success") {
        return {
          status: "error",
          error: refund.error ?? "refused",
          data: { code: "POLICY_DENIED" },
        };
      }
      return String(refund.output);
    }),
  );
  runtime.register("delete_account_agent", async () => {
    counters.deletions++;
    return "Your account is deleted.";
  });
  runtime.register(
    "essay_agent",
    h(async (_input, ctx, kit) => {
      // Two "LLM calls" of 600 tokens each, with a tool call after each.
      ctx.recordTokens({ promptTokens: 500, completionTokens: 100 });
      const first = await kit.tools.call("search_flights", { to: "research" });
      if (first.status !== "success")
        return { status: "error", error: `no research: ${first.error}` };
      ctx.recordTokens({ promptTokens: 500, completionTokens: 100 });
      const second = await kit.tools.call("search_flights", { to: "more research" });
      if (second.status !== "success") {
        return { status: "error", error: `could not finish: ${second.error}` };
      }
      return `essay using ${JSON.stringify([first.output, second.output])}`;
    }),
  );
  runtime.register(
    "profile_agent",
    h(async (input, _ctx, kit) => {
      const told = /my name is (\w+)/i.exec(input.message);
      if (told) {
        await kit.memory.store({ kind: "fact", key: "name", content: told[1] as string });
        return `Nice to meet you, ${told[1]}.`;
      }
      const { warm, hot } = await kit.memory.recall({ tiers: ["warm", "hot"] });
      const name = warm.find((f) => f.key === "name")?.content;
      return `${name === undefined ? "I don't know your name" : `Your name is ${name}`} (${hot.length} turns remembered).`;
    }),
  );
  const app = { orchestrator, policy, registry, memory, metrics, logs, counters, memoryPath: path };
  apps.push(app);
  return app;
}

const user = (userId: string, extra: ExecContextOptions = {}) =>
  ExecContext.create({ userId, sessionId: `${userId}-session`, ...extra });

describe("orchestrator end to end", () => {
  it("streams a streaming handler chunk by chunk, and a plain one as one final chunk", async () => {
    const { orchestrator, logs } = await makeApp();
    const ctx = user("streamer");
    const chunks: string[] = [];
    const stream = orchestrator.stream("tell me a story", ctx);
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks).toEqual(["Once", " upon", " a", " time"]);
    expect(await stream.response).toMatchObject({ status: "success", handler: "story_agent" });
    const plain: string[] = [];
    for await (const chunk of orchestrator.stream("hi there", user("streamer"))) plain.push(chunk);
    expect(plain).toEqual(["Hello!"]);
    expect(logs.map((l) => JSON.parse(l).event)).toContain("request.responded");
  });

  it("delegates two levels deep, each hop policy-checked, traced and counted", async () => {
    const { orchestrator, registry } = await makeApp();
    const ctx = user("traveller");
    const response = await orchestrator.handle("plan a trip to Berlin", ctx);
    expect(response).toMatchObject({ status: "success", handler: "travel_agent" });
    expect(response.text).toBe(
      'Trip planned. Flights ["LH101 to BER"], leaving next Tuesday 10:00 (depth 2).',
    );
    const byId = new Map(ctx.spans.map((s) => [s.id, s]));
    const path = (name: string, handler: string) => {
      let s = ctx.spans.find((x) => x.name === name && x.attributes["handler"] === handler);
      const names: string[] = [];
      while (s !== undefined) {
        const h = s.attributes["handler"];
        names.unshift(typeof h === "string" && s.name !== "handle" ? `${s.name} ${h}` : s.name);
        s = s.parentId === null ? undefined : byId.get(s.parentId);
      }
      return names;
    };
    expect(path("runtime.invoke", "calendar_agent")).toEqual([
      "handle",
      "runtime.invoke travel_agent",
      "delegate flight_agent",
      "runtime.invoke flight_agent",
      "delegate calendar_agent",
      "runtime.invoke calendar_agent",
    ]);
    const delegations = ctx.events.filter(
      (e) => e.name === "policy.decision" && e.attributes["kind"] === "delegate",
    );
    // Each delegation is checked by the kit and again by the runtime's policyDelegation hook.
    expect(delegations.map((e) => [e.attributes["name"], e.attributes["effect"]])).toEqual([
      ["flight_agent", "allow"],
      ["flight_agent", "allow"],
      ["calendar_agent", "allow"],
      ["calendar_agent", "allow"],
    ]);
    for (const agent of ["travel_agent", "flight_agent", "calendar_agent"]) {
      expect((await registry.stats("agent", agent, ctx))?.count).toBe(1);
    }
    expect((await registry.stats("tool", "calendar", ctx))?.count).toBe(1);
  });

  it("refuses a tool the policy denies: it never runs and the handler reports the refusal", async () => {
    const { orchestrator, counters, registry } = await makeApp();
    const guest = user("guest");
    const response = await orchestrator.handle("I want a refund", guest);
    expect(response.status).toBe("error");
    expect(response.error).toBe("POLICY_DENIED: Only staff may issue refunds.");
    expect(counters.refunds).toBe(0);
    expect(await registry.stats("tool", "issue_refund", guest)).toBeNull();

    const limited = user("limited", {
      permissions: { roles: ["staff"], allowedTools: ["calendar"] },
    });
    const denied = await orchestrator.handle("I want a refund", limited);
    expect(denied.error).toContain("PERMISSION_DENIED");
    expect(counters.refunds).toBe(0);

    const staff = user("clerk", { permissions: { roles: ["staff"] } });
    expect((await orchestrator.handle("I want a refund", staff)).text).toBe("refunded A-17");
    expect(counters.refunds).toBe(1);
  });

  it("holds a handler behind an approval gate until a manager approves, then runs it once", async () => {
    const { orchestrator, policy, counters } = await makeApp();
    const requester = user("alice");
    const pending = await rejection(orchestrator.handle("please delete my account", requester));
    expect(pending.code).toBe(ErrorCode.APPROVAL_PENDING);
    const approvalId = pending.details["approvalId"] as string;
    // The approval is a paused run of the policy's approvals queue.
    expect((await policy.approvals.get(approvalId))?.status).toBe("paused");
    expect(counters.deletions).toBe(0);
    expect((await rejection(orchestrator.handleApproved(approvalId, user("alice")))).code).toBe(
      ErrorCode.APPROVAL_PENDING,
    );
    expect(
      (
        await rejection(
          policy.approvals.resume(approvalId, { decision: "approve" }, { ctx: user("alice") }),
        )
      ).code,
    ).toBe(ErrorCode.PERMISSION_DENIED);
    expect((await rejection(orchestrator.handleApproved(approvalId, user("mallory")))).code).toBe(
      ErrorCode.NOT_FOUND,
    );
    expect(counters.deletions).toBe(0);

    const manager = user("boss", { permissions: { roles: ["manager"] } });
    await policy.approvals.resume(
      approvalId,
      { decision: "approve", note: "verified by phone" },
      { ctx: manager },
    );
    const done = await orchestrator.handleApproved(approvalId, user("alice"));
    expect(done).toMatchObject({ status: "success", text: "Your account is deleted." });
    expect(counters.deletions).toBe(1);
    // The approval was for one run: another attempt waits for a new one.
    const again = await rejection(orchestrator.handleApproved(approvalId, user("alice")));
    expect(again.code).toBe(ErrorCode.APPROVAL_PENDING);
    expect(again.details["approvalId"]).not.toBe(approvalId);
    expect(counters.deletions).toBe(1);
  });

  it("refuses a denied approval with POLICY_DENIED, to handleApproved and to the same request sent again", async () => {
    const { orchestrator, policy, counters } = await makeApp();
    const pending = await rejection(orchestrator.handle("please delete my account", user("bob")));
    const approvalId = pending.details["approvalId"] as string;
    const manager = user("boss", { permissions: { roles: ["manager"] } });
    await policy.approvals.resume(approvalId, { decision: "deny", note: "no" }, { ctx: manager });
    const denied = await rejection(orchestrator.handleApproved(approvalId, user("bob")));
    expect(denied.code).toBe(ErrorCode.POLICY_DENIED);
    expect(denied.message).toContain("was denied: no");
    const resent = await rejection(orchestrator.handle("please delete my account", user("bob")));
    expect(resent.code).toBe(ErrorCode.POLICY_DENIED);
    expect(counters.deletions).toBe(0);
  });

  it("stops a run that exceeds its token budget mid-way, charging the real usage", async () => {
    const policyYaml = `${BASE_POLICY}
  - name: per-user-daily
    per: user
    maxTokens: 1500
    windowSeconds: 86400
`;
    const { orchestrator, counters } = await makeApp(policyYaml);
    const ctx = user("writer");
    const err = await rejection(orchestrator.handle("write an essay", ctx));
    expect(err.code).toBe(ErrorCode.BUDGET_EXCEEDED);
    expect(err.message).toContain('Budget "per-request" exhausted');
    expect(err.details).toMatchObject({ handler: "essay_agent", rule: "per-request" });
    expect(counters.searches).toBe(1);
    expect(ctx.tokenUsage.totalTokens).toBe(1200);

    // The 1,200 tokens really used were charged to the user: the second essay's first 600 tokens
    // bring the user to 1,800 of 1,500, so its first tool call is refused...
    const second = await rejection(orchestrator.handle("write an essay", user("writer")));
    expect(second.code).toBe(ErrorCode.BUDGET_EXCEEDED);
    expect(second.message).toContain('Budget "per-user-daily" exhausted');
    // ...and with those 600 charged too, the third is refused before its handler starts.
    const third = user("writer");
    const refused = await rejection(orchestrator.handle("write an essay", third));
    expect(refused.message).toContain('Budget "per-user-daily" exhausted');
    expect(refused.details["checkpoint"]).toBe("before_invoke");
    expect(third.spans.some((s) => s.name === "runtime.invoke")).toBe(false);
    expect(counters.searches).toBe(1);
  });

  it("rate-limits a user before routing, counting each request once", async () => {
    const { orchestrator, metrics } = await makeApp(BASE_POLICY.replace("limit: 50", "limit: 2"));
    // A trip delegates twice and calls two tools: still one request.
    await orchestrator.handle("plan a trip", user("bob"));
    await orchestrator.handle("hello", user("bob"));
    const ctx = user("bob");
    const err = await rejection(orchestrator.handle("hello again", ctx));
    expect(err.code).toBe(ErrorCode.RATE_LIMITED);
    expect(err.details["retryAfterSeconds"]).toBeGreaterThanOrEqual(1);
    expect(err.details["retryAfterSeconds"]).toBeLessThanOrEqual(60);
    expect(ctx.spans.some((s) => s.name === "router.classify")).toBe(false);
    expect((await orchestrator.handle("hello", user("carol"))).status).toBe("success");
    expect(metrics.get("errors_total", { stage: "route", code: "RATE_LIMITED" })).toBe(1);
  });

  it("keeps two users' memories apart, and keeps them across a restart", async () => {
    const app = await makeApp();
    const { orchestrator } = app;
    await orchestrator.handle("my name is Alice", user("alice"));
    await orchestrator.handle("my name is Bob", user("bob"));
    expect((await orchestrator.handle("what is my name?", user("alice"))).text).toBe(
      "Your name is Alice (2 turns remembered).",
    );
    expect((await orchestrator.handle("what is my name?", user("bob"))).text).toBe(
      "Your name is Bob (2 turns remembered).",
    );
    expect((await orchestrator.handle("what is my name?", user("carol"))).text).toBe(
      "I don't know your name (0 turns remembered).",
    );
    await orchestrator.close();
    apps.splice(apps.indexOf(app), 1);

    const restarted = await makeApp(BASE_POLICY, app.memoryPath);
    expect((await restarted.orchestrator.handle("what is my name?", user("alice"))).text).toBe(
      "Your name is Alice (4 turns remembered).",
    );
  });
});
