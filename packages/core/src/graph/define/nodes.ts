import type { RunAnswerers } from "../../context/run-slot.js";
import { z } from "zod";
import { ErrorCode, NervaError, errorPolicyOf } from "../../errors.js";
import type { AgentInputInit, AgentResult, JsonValue } from "../../types/agent.js";
import { AgentStatus } from "../../types/status.js";
import { authorizeAgent } from "./node-policy.js";
import {
  NodeKind,
  type GraphNode,
  type GraphState,
  type NodeContext,
  type StateUpdate,
} from "./types.js";

/** Options every node factory takes. */
export interface NodeOptions<S extends GraphState> {
  /** State keys the node reads; it is given only these. */
  readonly reads?: readonly (keyof S & string)[];
  /** State keys the node may write. */
  readonly writes?: readonly (keyof S & string)[];
  /** In a fan-out, a failure of this node does not fail the join. */
  readonly optional?: boolean;
  /** Visits of this node in one run after which the run fails. */
  readonly maxVisits?: number;
  /** Seconds one visit may take. */
  readonly timeoutSeconds?: number;
}

function common<S extends GraphState>(o: NodeOptions<S> | undefined): Partial<GraphNode<S>> {
  if (o === undefined) return {};
  return {
    ...(o.reads === undefined ? {} : { reads: o.reads }),
    ...(o.writes === undefined ? {} : { writes: o.writes }),
    ...(o.optional === undefined ? {} : { optional: o.optional }),
    ...(o.maxVisits === undefined ? {} : { maxVisits: o.maxVisits }),
    ...(o.timeoutSeconds === undefined ? {} : { timeoutSeconds: o.timeoutSeconds }),
  };
}

function needFunction(value: unknown, what: string): void {
  if (typeof value !== "function") {
    throw new NervaError(ErrorCode.INVALID_OPTIONS, `Invalid ${what}: must be a function.`, {
      issues: [{ path: what, message: "must be a function" }],
    });
  }
}

/**
 * A node that runs a function of the state: it returns the keys it changes. Runs once per visit
 * (its result is committed); after a crash before the commit it runs again, so give side effects
 * an idempotency key or wrap them in `ctx.step`.
 *
 * @example
 * const lookup = fnNode(async (state, ctx) => ({ total: await loadTotal(state.orderId!, ctx.signal) }));
 */
export function fnNode<S extends GraphState>(
  fn: (state: S, ctx: NodeContext) => Promise<StateUpdate<S> | void> | StateUpdate<S> | void,
  options?: NodeOptions<S>,
): GraphNode<S> {
  needFunction(fn, "fnNode(fn)");
  return Object.freeze({ kind: NodeKind.FUNCTION, ...common(options), run: fn });
}

/** Options of {@link agentNode}. */
export interface AgentNodeOptions<S extends GraphState> extends Omit<NodeOptions<S>, "writes"> {
  /** Maps the state to the handler's AgentInput (default: `{ message: JSON of the state }`). */
  readonly input?: (state: S) => AgentInputInit;
  /** The state key the handler's `output` is written to (default: the node id, when it is a key). */
  readonly writes?: keyof S & string;
  /** Replaces the default mapping of the handler's result to a state update. */
  readonly output?: (result: AgentResult, state: S) => StateUpdate<S>;
}

const ArgsAnswerSchema = z.object({ args: z.record(z.string(), z.string()) }).strict();

/**
 * A node that invokes a registered handler through the graph runtime's `AgentRuntime` (so
 * in-process, subprocess and container handlers all work). The handler's `output` is written
 * under `writes` (default: the node id, when it is a state key), and the keys of its `data` that
 * are state keys are merged too. A `needs_data` / `needs_credentials` result pauses the
 * run at this node; `host.resume(runId, { args })` answers it and the handler is invoked
 * again with those args merged. Any other non-success result fails the node.
 *
 * @example
 * const refund = agentNode("refund_agent", { input: (s) => ({ message: "refund", args: { orderId: s.orderId! } }) });
 */
export function agentNode<S extends GraphState>(
  handler: string,
  options: AgentNodeOptions<S> = {},
): GraphNode<S> {
  if (typeof handler !== "string" || handler.length === 0) {
    throw new NervaError(
      ErrorCode.INVALID_OPTIONS,
      "Invalid agentNode(handler): must be the name of a registered handler.",
      { issues: [{ path: "handler", message: "must be a non-empty string" }] },
    );
  }
  if (options.input !== undefined) needFunction(options.input, "agentNode options.input");
  if (options.output !== undefined) needFunction(options.output, "agentNode options.output");
  const { writes, input, output, ...rest } = options;
  const run = async (state: S, ctx: NodeContext): Promise<StateUpdate<S>> => {
    const init: AgentInputInit = input?.(state) ?? { message: JSON.stringify(state) };
    let args: Record<string, string> = { ...(init.args ?? {}) };
    for (const answer of ctx.answers) args = { ...args, ...parseArgs(answer) };
    await authorizeAgent(ctx, handler, init.message);
    for (;;) {
      const result = await ctx.runtime.invoke(handler, { ...init, args }, ctx.exec);
      if (
        result.status === AgentStatus.NEEDS_DATA ||
        result.status === AgentStatus.NEEDS_CREDENTIALS
      ) {
        if (ctx.signal.aborted) throw new Error(result.error ?? result.status);
        const answer = await ctx.input<JsonValue>({
          prompt: result.output || result.error || `${handler} needs more data`,
          kind: result.status,
          data: { ...result.data },
          schema: ArgsAnswerSchema,
        });
        args = { ...args, ...parseArgs(answer) };
        continue;
      }
      if (result.status !== AgentStatus.SUCCESS) {
        throw new AgentNodeError(handler, result);
      }
      if (output !== undefined) return output(result, state);
      const update: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(result.data)) if (ctx.stateKeys.has(k)) update[k] = v;
      const key = writes ?? ctx.nodeId;
      if (ctx.stateKeys.has(key)) update[key] = result.output;
      return update as StateUpdate<S>;
    }
  };
  return Object.freeze({
    kind: NodeKind.AGENT,
    ...common(rest),
    handler,
    run,
  }) as GraphNode<S>;
}

function parseArgs(answer: unknown): Record<string, string> {
  const parsed = ArgsAnswerSchema.safeParse(answer);
  return parsed.success ? parsed.data.args : {};
}

/** A handler invoked by an agent node ended without success. */
export class AgentNodeError extends Error {
  override readonly name = "AgentNodeError";
  /**
   * Retrying helps unless the handler was the wrong one or failed with a code no retry can help
   * (it threw an `UnrecoverableError`, in this process or another; see `ERROR_POLICY`).
   */
  readonly retriable: boolean;
  constructor(
    readonly handler: string,
    readonly result: AgentResult,
  ) {
    super(
      `Handler "${handler}" ended ${result.status}${result.error === null ? "" : `: ${result.error}`}`,
    );
    this.retriable =
      result.status !== AgentStatus.WRONG_HANDLER &&
      errorPolicyOf(result.data.code)?.retriable !== false;
  }
}

/** Options of {@link inputNode}. */
export interface InputNodeOptions<S extends GraphState> extends Omit<NodeOptions<S>, "writes"> {
  /** What the person is asked (a function of the state, or a fixed text). */
  readonly prompt: string | ((state: S) => string);
  /** What is asked: `approval` (default), `text`, `choice`… */
  readonly kind?: string;
  /** The state key the answer is written to. */
  readonly writes: keyof S & string;
  /** Validates the answer (INVALID_INPUT at `resume`). */
  readonly schema?: z.ZodType;
  /** Extra JSON shown with the question (e.g. choices). */
  readonly data?: (state: S) => Record<string, JsonValue>;
  /** Who may answer: users by id or roles (`host.resume(id, answer, { ctx })`). */
  readonly answeredBy?: RunAnswerers;
}

/**
 * A client-facing node: the run pauses (`run.paused`, status `paused`) until a
 * person answers with `host.resume(runId, value)`; the answer is written to
 * `writes`.
 *
 * @example
 * const review = inputNode({ prompt: (s) => `Refund ${s.total}?`, kind: "approval", writes: "decision" });
 */
export function inputNode<S extends GraphState>(options: InputNodeOptions<S>): GraphNode<S> {
  const o = options as Partial<InputNodeOptions<S>> | undefined;
  if (o === undefined || (typeof o.prompt !== "string" && typeof o.prompt !== "function")) {
    throw new NervaError(
      ErrorCode.INVALID_OPTIONS,
      "Invalid inputNode options.prompt: must be a string or a function (state) => string.",
      { issues: [{ path: "options.prompt", message: "must be a string or a function" }] },
    );
  }
  if (typeof o.writes !== "string" || o.writes.length === 0) {
    throw new NervaError(
      ErrorCode.INVALID_OPTIONS,
      'Invalid inputNode options.writes: must be the state key the answer goes to (e.g. "decision").',
      { issues: [{ path: "options.writes", message: "must be a state key" }] },
    );
  }
  const { prompt, kind, writes, schema, data, answeredBy, ...rest } = options;
  return Object.freeze({
    kind: NodeKind.INPUT,
    ...common(rest),
    writes: [writes],
    ...(schema === undefined ? {} : { inputSchema: schema }),
    run: async (state: S, ctx: NodeContext): Promise<StateUpdate<S>> => {
      const answer = await ctx.input({
        prompt: typeof prompt === "function" ? prompt(state) : prompt,
        kind: kind ?? "approval",
        ...(data === undefined ? {} : { data: data(state) }),
        ...(schema === undefined ? {} : { schema }),
        ...(answeredBy === undefined ? {} : { answeredBy }),
      });
      return { [writes]: answer } as StateUpdate<S>;
    },
  });
}
