// The request of the acceptance test, shared by the tests of this package: a flight agent that
// recalls memory, spends tokens, calls a tool and delegates to a calendar agent that calls one.
import { z } from "zod";
import {
  ExecContext,
  FunctionToolManager,
  InProcessRuntime,
  Orchestrator,
  RuleRouter,
  defineTool,
  type ExecContextOptions,
  type OrchestratorResponse,
} from "@nerva/core";
import { TieredMemory } from "@nerva/core/memory";
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from "@opentelemetry/sdk-trace-base";

/** What a test may hook into the world's tools and handlers. */
export interface WorldHooks {
  /** Runs inside the search_flights tool. */
  inTool?: () => Promise<void> | void;
  /** Runs inside the flight agent's handler. */
  inHandler?: (ctx: ExecContext) => Promise<void> | void;
}

export function flightWorld(hooks: WorldHooks = {}) {
  const tools = new FunctionToolManager({ timeoutSeconds: 10 })
    .register(
      defineTool({
        name: "search_flights",
        description: "Finds flights",
        parameters: z.object({ to: z.string() }),
        run: async ({ to }) => {
          await hooks.inTool?.();
          return [`LH123 to ${to}`];
        },
      }),
    )
    .register(
      defineTool({
        name: "calendar",
        description: "Finds a free slot",
        parameters: z.object({ when: z.string() }),
        run: ({ when }) => `${when}, 10:00`,
      }),
    )
    .register(
      defineTool({
        name: "broken",
        description: "Always fails",
        parameters: z.object({}),
        run: () => {
          throw new Error("the booking system is down");
        },
      }),
    );
  const runtime = new InProcessRuntime();
  const orchestrator = new Orchestrator({
    router: new RuleRouter({
      rules: [
        { handler: "flight_agent", keywords: ["flight"] },
        { handler: "broken_agent", keywords: ["broken"] },
      ],
    }),
    runtime,
    tools,
    memory: new TieredMemory(),
  });
  runtime.register(
    "flight_agent",
    orchestrator.handler(async (input, ctx, kit) => {
      await kit.memory.recall(input.message);
      ctx.recordTokens({
        promptTokens: 120,
        completionTokens: 30,
        costUsd: 0.002,
        cachedInputTokens: 100,
      });
      ctx.event("flight.searching", { to: "BER" });
      await hooks.inHandler?.(ctx);
      const flights = await kit.tools.call("search_flights", { to: "BER" }, { callId: "call_1" });
      const slot = await kit.delegate("calendar_agent", "next Tuesday");
      return `Found ${(flights.output as string[]).join(", ")}; you are free ${String(slot.output)}.`;
    }),
  );
  runtime.register(
    "calendar_agent",
    orchestrator.handler(async (input, ctx, kit) => {
      ctx.recordTokens({ promptTokens: 40, completionTokens: 10, costUsd: 0.0005 });
      const slot = await kit.tools.call("calendar", { when: input.message });
      return String(slot.output);
    }),
  );
  runtime.register(
    "broken_agent",
    orchestrator.handler(async (_input, _ctx, kit) => {
      const r = await kit.tools.call("broken", {});
      throw new Error(`tool said: ${r.error ?? "?"}`);
    }),
  );
  return {
    tools,
    runtime,
    orchestrator,
    /** Handles `message` in a fresh context with `options`. */
    async request(
      message: string,
      options: ExecContextOptions,
    ): Promise<{ ctx: ExecContext; response: OrchestratorResponse }> {
      const ctx = ExecContext.create({ userId: "u1", sessionId: "s1", ...options });
      const response = await orchestrator.handle(message, ctx);
      return { ctx, response };
    },
  };
}

/** An in-memory exporter behind a SimpleSpanProcessor: spans are there as soon as they end. */
export function memoryExport() {
  const exporter = new InMemorySpanExporter();
  return { exporter, processor: new SimpleSpanProcessor(exporter) };
}

/** The exported span with `name`, failing the test when there is not exactly one. */
export function one(spans: readonly ReadableSpan[], name: string): ReadableSpan {
  const found = spans.filter((s) => s.name === name);
  if (found.length !== 1) {
    throw new Error(
      `expected one span "${name}", got ${found.length}: ${spans.map((s) => s.name).join(", ")}`,
    );
  }
  return found[0]!;
}
