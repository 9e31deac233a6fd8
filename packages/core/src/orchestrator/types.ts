import type { ExecContext } from "../context/exec-context.js";
import type {
  Memory,
  MemoryEventInit,
  MemoryItem,
  MemoryQuery,
  MemoryRecall,
} from "../memory/types.js";
import type { Middleware, OrchestratorResponse } from "../middleware/types.js";
import type { PolicyAction, PolicyDecision, PolicyEngine } from "../policy/types.js";
import type { Registry } from "../registry/types.js";
import type { Channel, Responder } from "../responder/types.js";
import type { Router } from "../router/types.js";
import type { AgentRuntime, HandlerReturn } from "../runtime/types.js";
import type { ToolCallOptions, ToolInfo, ToolManager, ToolResult } from "../tools/types.js";
import type { AgentInput, AgentInputInit, AgentResult } from "../types/agent.js";

/**
 * What an {@link Orchestrator} is built from: a `runtime` or its `agents`; without a `router`
 * every message goes to the only handler, and every other primitive is skipped when absent.
 *
 * @example
 * const orchestrator = new Orchestrator({ router, runtime, tools, memory, responder, registry, policy, middleware: [new LoggingMiddleware()] });
 */
export interface OrchestratorOptions {
  /** Picks the handler of each message; needed when the runtime has more than one. */
  readonly router?: Router;
  /** What executes the handlers the router picks (in-process, subprocess, container)… */
  readonly runtime?: AgentRuntime;
  /**
   * …or the agents themselves, by name: run in-process, each given the orchestrator's kit
   * (`(input, ctx, kit)`, e.g. `modelAgent(...)`). Give exactly one of `runtime` and `agents`.
   */
  readonly agents?: Readonly<Record<string, KitHandler>>;
  readonly tools?: ToolManager;
  readonly memory?: Memory;
  /** Formats results and stream chunks; default: passes the output through unchanged. */
  readonly responder?: Responder;
  /** Receives invocation stats of handlers and tools (entries are registered on first use). */
  readonly registry?: Registry;
  /** Evaluated before routing, before each invocation, and on each kit tool call and delegation. */
  readonly policy?: PolicyEngine;
  readonly middleware?: readonly Middleware[];
  /** Channel for `format` when a call does not name one; default `"plain"`. */
  readonly channel?: Channel;
  /** How many ranked candidates to try when handlers answer `wrong_handler`; default 3. */
  readonly maxCandidates?: number;
  /** Store the user message and the answer as memory turns after a success; default true. */
  readonly remember?: boolean;
  /** List the tools the context may use in `AgentInput.tools`; default true. */
  readonly exposeTools?: boolean;
}

/** Per-call options of `handle` and `stream`. */
export interface HandleOptions {
  readonly channel?: Channel;
  /**
   * The handler to run, instead of asking the router: for a caller that already knows which
   * agent it wants (an MCP tool call, a form posting to one agent). Everything else of a request
   * still applies: middleware, the policy before routing (rate limits) and before invocation,
   * memory turns, budget charging. A handler the context may not use is PERMISSION_DENIED.
   */
  readonly agent?: string;
  /** Structured arguments for the handler (`input.args`). */
  readonly args?: Readonly<Record<string, string>>;
}

/**
 * An async iterable of formatted chunks, pushed as the handler produces them; `response` settles
 * with the final response (or the error) of the same request. Work starts on the first `next()`
 * or when `response` is read; breaking out of the loop cancels the request.
 *
 * @example
 * const stream = orchestrator.stream("Book me a flight", ctx);
 * for await (const chunk of stream) res.write(chunk);
 * const { status } = await stream.response;
 */
export interface OrchestratorStream extends AsyncIterable<string> {
  readonly response: Promise<OrchestratorResponse>;
}

/**
 * What a handler reaches the other primitives through, bound to its own context: tool calls and
 * delegations pass the policy (`during_execution`) and are counted in the registry; memory reads
 * and writes use the context's scope and identity.
 *
 * @example
 * runtime.register("flight_agent", orchestrator.handler(async (input, ctx, kit) => {
 *   const { warm } = await kit.memory.recall(input.message);
 *   const flights = await kit.tools.call("search_flights", { to: "BER" });
 *   const slot = await kit.delegate("calendar_agent", "next Tuesday");
 *   return `Found ${JSON.stringify(flights.output)}; free ${slot.output}`;
 * }));
 */
export interface AgentKit {
  readonly ctx: ExecContext;
  readonly tools: {
    /** Tools this context may use (empty without a tool manager). */
    discover(): Promise<readonly ToolInfo[]>;
    /**
     * A refused call resolves `permission_denied` with the policy's code in `error`; it never
     * runs. `options.callId` (a model's tool call id) is recorded on the tool's span.
     */
    call(name: string, args?: unknown, options?: ToolCallOptions): Promise<ToolResult>;
  };
  readonly memory: {
    /** Throws NervaError INVALID_OPTIONS when the orchestrator has no memory. */
    recall(query?: string | MemoryQuery): Promise<MemoryRecall>;
    store(event: MemoryEventInit): Promise<MemoryItem>;
  };
  /** `runtime.delegate` after a policy check; a refusal is an ERROR result naming the code. */
  delegate(handler: string, input: AgentInputInit | string): Promise<AgentResult>;
  /**
   * Asks the policy about an action at the `during_execution` checkpoint (e.g. kind `model`
   * before each model step, so that an exhausted budget stops the loop). Resolves `null` when
   * allowed, else the refusal (`deny` or `pending`); a policy that throws refuses.
   *
   * @example
   * const refused = await kit.authorize({ kind: "model", name: "openai/gpt-4o-mini" });
   * if (refused !== null) throw decisionError(refused);
   */
  authorize(action: Omit<PolicyAction, "checkpoint">): Promise<PolicyDecision | null>;
}

/**
 * A handler written against an {@link AgentKit}; adapt it with `orchestrator.handler(fn)`.
 * Async generator functions stream as usual.
 *
 * @example
 * const fn: KitHandler = async (input, ctx, kit) => (await kit.tools.call("echo", { text: input.message })).error ?? "ok";
 */
export type KitHandler = (
  input: AgentInput,
  ctx: ExecContext,
  kit: AgentKit,
) => Promise<HandlerReturn> | HandlerReturn | AsyncIterable<string>;
