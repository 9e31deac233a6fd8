// The requests the trace sink contract sends through a sink: real primitives (orchestrator, rule
// router, in-process runtime, function tools, delegation), run concurrently, through the public
// ExecContext API only.
import { z } from "zod";
import { ExecContext } from "../context/exec-context.js";
import type { Span } from "../context/span.js";
import { Orchestrator } from "../orchestrator/orchestrator.js";
import { RuleRouter } from "../router/rule-router.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { FunctionToolManager, defineTool } from "../tools/function-tool-manager.js";
import type { TraceSink } from "../tracing/sink.js";

/** Names that break naive writers: quotes, a newline, emoji, CJK, a right-to-left mark. */
export const ODD_NAME = 'search "検索" 🔎\nline two \u200f';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** An orchestrator with a planner (tools, a model call, delegation), a calendar and a failing agent. */
export function scenarioOrchestrator(): Orchestrator {
  const tools = new FunctionToolManager()
    .register(
      defineTool({
        name: "search",
        description: "Searches flights",
        parameters: z.object({ to: z.string() }),
        run: async ({ to }) => {
          await sleep(1);
          return [`LH123 to ${to}`];
        },
      }),
    )
    .register(
      defineTool({
        name: "flaky",
        description: "Always fails",
        parameters: z.object({}),
        run: () => {
          throw new Error("upstream 503");
        },
      }),
    );
  const runtime = new InProcessRuntime();
  const orchestrator = new Orchestrator({
    router: new RuleRouter({
      rules: [
        { handler: "broken_agent", keywords: ["broken"] },
        { handler: "planner", keywords: ["flight"] },
      ],
      defaultHandler: "calendar_agent",
    }),
    runtime,
    tools,
  });
  runtime.register(
    "planner",
    orchestrator.handler(async (input, ctx, kit) => {
      await ctx.span("chat", (chat) => {
        chat.recordTokens({
          promptTokens: 120,
          completionTokens: 30,
          costUsd: 0.0021,
          model: "m1",
        });
      });
      ctx.event("plan.ready", { steps: 3, "städte ✈": "BER" });
      await kit.tools.call("search", { to: "BER" });
      await kit.tools.call("flaky", {});
      // A span that ends long after its children did.
      const batch = ctx.startSpan(ODD_NAME, { [ODD_NAME]: ODD_NAME, n: 2, ok: true });
      const inBatch = ctx.fork({ span: batch });
      inBatch.startSpan("batch.item").end();
      inBatch.startSpan("batch.item").end("error", "item rejected");
      inBatch.dispose();
      await sleep(25);
      batch.end();
      const slot = await kit.delegate("calendar_agent", `when? ${input.message}`);
      return `booked ${String(slot.output)}`;
    }),
  );
  runtime.register("calendar_agent", async (_input, ctx) => {
    ctx.recordTokens({ promptTokens: 40, completionTokens: 8, costUsd: 0.0004 });
    ctx.event("calendar.checked");
    await sleep(1);
    return "Tuesday 10:00";
  });
  runtime.register("broken_agent", async (_input, ctx) => {
    ctx.recordTokens({ promptTokens: 9, completionTokens: 1, costUsd: 0.0001 });
    throw new Error("model unavailable");
  });
  return orchestrator;
}

/** One request of the scenario, after it ended. */
export interface ScenarioRequest {
  readonly userId: string | null;
  readonly ctx: ExecContext;
}

/** A run continued from another process (e.g. a durable run): its root has a remote parent. */
async function continued(userId: string, sink: TraceSink): Promise<ExecContext> {
  const elsewhere = ExecContext.create({ userId });
  const enqueue = elsewhere.startSpan("enqueue");
  const wire = JSON.parse(JSON.stringify(elsewhere.fork({ span: enqueue }).toWire())) as unknown;
  enqueue.end();
  const ctx = ExecContext.fromWire(wire, { traceSink: sink });
  await ctx.span("run.step", async (step) => {
    step.recordTokens({ promptTokens: 5, completionTokens: 5, costUsd: 0.00005 });
    step.event("step.done", { attempt: 1 });
  });
  return ctx;
}

/**
 * Sends the scenario through `sink`, concurrently: a planner request (alice), a failing one
 * (bob), an anonymous one and a run continued from another process (carol).
 */
export async function runScenario(sink: TraceSink): Promise<ScenarioRequest[]> {
  const orchestrator = scenarioOrchestrator();
  const handle = async (userId: string | null, message: string): Promise<ExecContext> => {
    const ctx = ExecContext.create({ userId: userId ?? undefined, traceSink: sink });
    await orchestrator.handle(message, ctx);
    return ctx;
  };
  const [alice, bob, anonymous, carol] = await Promise.all([
    handle("alice", "Book a flight to Berlin"),
    handle("bob", "this is broken"),
    handle(null, "what is on my calendar"),
    continued("carol", sink),
  ]);
  return [
    { userId: "alice", ctx: alice },
    { userId: "bob", ctx: bob },
    { userId: null, ctx: anonymous },
    { userId: "carol", ctx: carol },
  ];
}

/** Every span of the scenario's requests (they all ended). */
export function scenarioSpans(requests: readonly ScenarioRequest[]): Span[] {
  return requests.flatMap((r) => [...r.ctx.spans]);
}
