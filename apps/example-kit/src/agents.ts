import {
  FunctionToolManager,
  InProcessRuntime,
  Orchestrator,
  RuleRouter,
  defineTool,
} from "@nerva/core";
import { TieredMemory } from "@nerva/core/memory";
import type { PolicyEngine } from "@nerva/core/policy";
import type { Registry } from "@nerva/core/registry";
import { z } from "zod";
import type { NervaModel } from "@nerva/ai-sdk";
import { registerConcierge } from "./concierge.js";
import { countAgent, pause, type ExampleLog } from "./count-agent.js";

/** What {@link createOrchestrator} builds the orchestrator with; every field is optional. */
export interface ExampleOrchestratorOptions {
  /** The model of `concierge_agent` (see `exampleModel()`); without one `echo_agent` answers. */
  concierge?: NervaModel;
  /** Conversation memory (default: a new in-memory `TieredMemory`). */
  memory?: TieredMemory;
  registry?: Registry;
  policy?: PolicyEngine;
  /** Where `count_agent` logs (default: nowhere). */
  log?: ExampleLog;
}

/**
 * The demo's agents, all in-process with embedded defaults (no external services):
 * - `flight_agent` ("flight", "fly", "book") calls the `search_flights` tool, which fails for
 *   "Atlantis" (no airport: a failing request to look at in the trace viewer); for "book …"
 *   it then books the first flight found with the `book_flight` tool, which the service's
 *   policy gates behind the requester's own approval (see `examplePolicy`);
 * - `trip_agent` ("trip") delegates the flights to `flight_agent`;
 * - `memory_agent` ("remember", "earlier") reads this session's earlier turns from memory;
 * - `story_agent` ("story") streams its answer word by word, and stops when the client leaves;
 * - `refund_agent` ("refund") issues a refund (the service's policy gates it behind an approval);
 * - `count_agent` ("count to N") counts to N, a committed step per number in a durable run;
 * - `echo_agent` takes everything else, or, with `options.concierge` (a model, see
 *   `exampleModel()`), `concierge_agent` does and `echo_agent` answers messages with "echo".
 *
 * @example
 * const { orchestrator, close } = createOrchestrator();
 * const answer = await orchestrator.handle("Find me a flight to Lisbon", ExecContext.create({ userId: "alice" }));
 * await close();
 */
export function createOrchestrator(options: ExampleOrchestratorOptions = {}): {
  orchestrator: Orchestrator;
  close(): Promise<void>;
} {
  const runtime = new InProcessRuntime({ timeoutSeconds: 60 });
  const memory = options.memory ?? new TieredMemory();
  const tools = new FunctionToolManager()
    .register(
      defineTool({
        name: "search_flights",
        description: "Finds flights to a city",
        parameters: z.object({ to: z.string().min(1) }),
        run: ({ to }) => {
          if (to === "Atlantis") throw new Error("No airport serves Atlantis.");
          return [`NV101 to ${to} at 08:15`, `NV205 to ${to} at 17:40`];
        },
      }),
    )
    .register(
      defineTool({
        name: "book_flight",
        description: "Books a seat on a flight",
        parameters: z.object({ flight: z.string().min(1), to: z.string().min(1) }),
        run: ({ flight, to }) => ({ flight, to, reference: `BK-${flight}-${to.toUpperCase()}` }),
      }),
    );
  const orchestrator = new Orchestrator({
    router: new RuleRouter({
      rules: [
        { handler: "flight_agent", keywords: ["flight", "fly", "book"] },
        { handler: "trip_agent", keywords: ["trip"] },
        { handler: "memory_agent", keywords: ["remember", "earlier"] },
        { handler: "story_agent", keywords: ["story"] },
        { handler: "refund_agent", keywords: ["refund"] },
        { handler: "count_agent", pattern: /\bcount to \d/i },
        ...(options.concierge === undefined ? [] : [{ handler: "echo_agent", keywords: ["echo"] }]),
      ],
      defaultHandler: options.concierge === undefined ? "echo_agent" : "concierge_agent",
    }),
    runtime,
    tools,
    memory,
    ...(options.registry === undefined ? {} : { registry: options.registry }),
    ...(options.policy === undefined ? {} : { policy: options.policy }),
  });

  runtime.register(
    "flight_agent",
    orchestrator.handler(async (input, ctx, kit) => {
      const to = /\bto ([A-Z][\w-]*)/.exec(input.message)?.[1] ?? "Berlin";
      const search = () => kit.tools.call("search_flights", { to });
      // In a durable run the search is a committed step: when the run goes on after the
      // booking's approval, the flights are not searched (nor shown to a chat) again.
      const found = ctx.run === null ? await search() : await ctx.run.step("search", search);
      if (found.status !== "success") {
        ctx.event("flights.unavailable", { to, error: found.error ?? "search failed" });
        return { status: "error", error: found.error ?? "search failed" };
      }
      const flights = found.output as string[];
      if (!/\bbook\b/i.test(input.message)) return `Flights to ${to}: ${flights.join("; ")}.`;
      const flight = flights[0]?.split(" ")[0] ?? "NV101";
      // Gated by the policy: in a chat's durable run, the run pauses until its user approves.
      const booked = await kit.tools.call("book_flight", { flight, to });
      if (booked.status !== "success") return `${flight} to ${to} is not booked: ${booked.error}`;
      const { reference } = booked.output as { reference: string };
      return `Booked ${flight} to ${to}. Your reference is ${reference}.`;
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
    "refund_agent",
    async (input, ctx) =>
      `Refund issued for ${ctx.userId ?? "stranger"}: "${input.message}" (approved before it ran).`,
  );
  runtime.register("count_agent", countAgent(options.log ?? (() => undefined)));
  runtime.register(
    "echo_agent",
    async (input, ctx) => `${ctx.userId ?? "stranger"}, you said: ${input.message}`,
  );

  if (options.concierge !== undefined) registerConcierge(orchestrator, runtime, options.concierge);

  return {
    orchestrator,
    close: async () => {
      await runtime.close();
      // Memory given by the caller is the caller's to close.
      if (options.memory === undefined) await memory.close();
      await tools.close();
    },
  };
}
