import {
  FunctionToolManager,
  InProcessRuntime,
  Orchestrator,
  RuleRouter,
  defineTool,
} from "@nerva/core";
import { TieredMemory } from "@nerva/core/memory";
import { z } from "zod";
import type { NervaModel } from "@nerva/ai-sdk";
import { registerConcierge } from "./concierge.js";

/**
 * The demo's agents, all in-process with embedded defaults (no external services):
 * - `flight_agent` ("flight", "fly") calls the `search_flights` tool, which fails for
 *   "Atlantis" (no airport: a failing request to look at in the trace viewer);
 * - `trip_agent` ("trip") delegates the flights to `flight_agent`;
 * - `memory_agent` ("remember", "earlier") reads this session's earlier turns from memory;
 * - `story_agent` ("story") streams its answer word by word, and stops when the client leaves;
 * - `echo_agent` takes everything else, or, with `options.concierge` (a model, see
 *   `exampleModel()`), `concierge_agent` does and `echo_agent` answers messages with "echo".
 *
 * @example
 * const { orchestrator, close } = createOrchestrator();
 * const answer = await orchestrator.handle("Find me a flight to Lisbon", ExecContext.create({ userId: "alice" }));
 * await close();
 */
export function createOrchestrator(options: { concierge?: NervaModel } = {}): {
  orchestrator: Orchestrator;
  close(): Promise<void>;
} {
  const runtime = new InProcessRuntime({ timeoutSeconds: 30 });
  const memory = new TieredMemory();
  const tools = new FunctionToolManager().register(
    defineTool({
      name: "search_flights",
      description: "Finds flights to a city",
      parameters: z.object({ to: z.string().min(1) }),
      run: ({ to }) => {
        if (to === "Atlantis") throw new Error("No airport serves Atlantis.");
        return [`NV101 to ${to} at 08:15`, `NV205 to ${to} at 17:40`];
      },
    }),
  );
  const orchestrator = new Orchestrator({
    router: new RuleRouter({
      rules: [
        { handler: "flight_agent", keywords: ["flight", "fly"] },
        { handler: "trip_agent", keywords: ["trip"] },
        { handler: "memory_agent", keywords: ["remember", "earlier"] },
        { handler: "story_agent", keywords: ["story"] },
        ...(options.concierge === undefined ? [] : [{ handler: "echo_agent", keywords: ["echo"] }]),
      ],
      defaultHandler: options.concierge === undefined ? "echo_agent" : "concierge_agent",
    }),
    runtime,
    tools,
    memory,
  });

  runtime.register(
    "flight_agent",
    orchestrator.handler(async (input, ctx, kit) => {
      const to = /\bto ([A-Z][\w-]*)/.exec(input.message)?.[1] ?? "Berlin";
      const found = await kit.tools.call("search_flights", { to });
      if (found.status !== "success") {
        ctx.event("flights.unavailable", { to, error: found.error ?? "search failed" });
        return { status: "error", error: found.error ?? "search failed" };
      }
      return `Flights to ${to}: ${(found.output as string[]).join("; ")}.`;
    }),
  );
  runtime.register("trip_agent", async (input, ctx, agents) => {
    const to = /\bto ([A-Z][\w-]*)/.exec(input.message)?.[1] ?? "Berlin";
    ctx.event("trip.requested", { to });
    const flights = await agents.delegate("flight_agent", { message: `flight to ${to}` }, ctx);
    if (flights.status !== "success")
      return { status: "error", error: flights.error ?? "flight_agent failed" };
    return `Your trip to ${to}. ${String(flights.output)}`;
  });
  runtime.register(
    "memory_agent",
    orchestrator.handler(async (_input, _ctx, kit) => {
      const { hot } = await kit.memory.recall({ tiers: ["hot"] });
      const said = hot.filter((t) => t.role === "user").map((t) => `"${t.content}"`);
      return said.length === 0
        ? "You have not told me anything yet in this session."
        : `Earlier in this session you said: ${said.join(", ")}.`;
    }),
  );
  runtime.register("story_agent", async function* (_input, ctx) {
    const words = "Once upon a time an agent answered every request on time .".split(" ");
    for (const word of words) {
      // A real model streams tokens as they come; the pause stands in for that, and ends early
      // when the request is cancelled (client disconnect, deadline).
      await pause(40, ctx.signal);
      if (ctx.signal.aborted) return;
      yield `${word} `;
    }
  });
  runtime.register(
    "echo_agent",
    async (input, ctx) => `${ctx.userId ?? "stranger"}, you said: ${input.message}`,
  );

  if (options.concierge !== undefined) registerConcierge(orchestrator, runtime, options.concierge);

  return {
    orchestrator,
    close: async () => {
      await runtime.close();
      await memory.close();
      await tools.close();
    },
  };
}

/** Waits `ms`, or less when `signal` aborts; leaves no timer or listener behind. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
