import type { ExecContext } from "../context/exec-context.js";
import type {
  AgentInput,
  AgentInputInit,
  AgentResult,
  PartialAgentResult,
} from "../types/agent.js";

/**
 * What every runtime (in-process, subprocess, container, or your own) implements. Agent failures
 * come back as `AgentResult.status`; only bad arguments throw (`NervaError`).
 *
 * @example
 * async function run(runtime: AgentRuntime, ctx: ExecContext) {
 *   return runtime.invoke("my_agent", { message: "hello" }, ctx);
 * }
 */
export interface AgentRuntime {
  /** Runs one handler with the context's deadline, the handler's timeout and its breaker. */
  invoke(handler: string, input: AgentInputInit, ctx: ExecContext): Promise<AgentResult>;
  /** Runs handlers in order, each output becoming the next message; stops at the first non-success. */
  invokeChain(
    handlers: readonly string[],
    input: AgentInputInit,
    ctx: ExecContext,
  ): Promise<AgentResult>;
  /** Agent-to-agent call in a child context, with depth, cycle, permission and policy checks. */
  delegate(handler: string, input: AgentInputInit, parentCtx: ExecContext): Promise<AgentResult>;
  /** Names of the registered handlers. */
  handlerNames(): readonly string[];
  /** Releases processes, containers and timers the runtime holds. */
  close(): Promise<void>;
}

/** What an in-process handler may return (or `yield` strings from an async generator). */
export type HandlerReturn = string | PartialAgentResult | null | undefined | void;

/**
 * An in-process agent handler. `ctx.signal` aborts when the handler times out or the request is
 * cancelled; well-behaved handlers pass it on to their I/O.
 *
 * @example
 * const echo: AgentHandler = async (input) => `Processed: ${input.message}`;
 * const stream: AgentHandler = async function* (input) { for (const w of input.message.split(" ")) yield w; };
 */
export type AgentHandler = (
  input: AgentInput,
  ctx: ExecContext,
  runtime: AgentRuntime,
) => Promise<HandlerReturn> | HandlerReturn | AsyncIterable<string>;

/** Who is asking to delegate, handed to a {@link DelegationPolicy}. */
export interface DelegationRequest {
  /** The delegating agent, or `null` when delegating from outside any agent. */
  readonly from: string | null;
  readonly to: string;
  readonly input: AgentInput;
  readonly ctx: ExecContext;
}

/** Optional hook consulted before each delegation; `false` or a throw refuses it (fail closed). */
export type DelegationPolicy = (
  request: DelegationRequest,
) =>
  | boolean
  | { allow: boolean; reason?: string }
  | Promise<boolean | { allow: boolean; reason?: string }>;
