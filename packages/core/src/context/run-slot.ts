// What `ctx.run` is: the interface of the durable run a request executes in and the request-local
// slot holding it. They sit with the context, which reads the slot; the implementation (ActiveRun,
// with its store and transition code) stays in runs/, above, and is never loaded on a request's
// path by the context.
import type { JsonValue } from "../types/agent.js";
import { ContextKey } from "./local.js";

/** What a paused question carries (see {@link RunContext.waitForInput}). */
export interface WaitForInputOptions {
  /** Shown to whoever answers, e.g. "Refund 42.00?". */
  prompt?: string;
  /** What is asked, e.g. "approval" (the default) or "text". */
  kind?: string;
  /** Anything the answerer needs, as JSON. */
  data?: Record<string, JsonValue>;
  /**
   * Who may answer: `resume` then needs the answerer's context (`{ ctx }`), whose user is one of
   * `users` or who has one of `roles`. Anyone with the store may answer when it is not given.
   */
  answeredBy?: RunAnswerers;
}

/**
 * Who may answer a pause: users by id, or anyone with one of the roles, except the users and
 * anonymous sessions listed in `exceptUsers` / `exceptSessions` (a policy approval's requester
 * when the rule forbids self-approval).
 */
export interface RunAnswerers {
  readonly users?: readonly string[];
  readonly roles?: readonly string[];
  readonly exceptUsers?: readonly string[];
  /** Sessions of anonymous contexts (no user) that may not answer. */
  readonly exceptSessions?: readonly string[];
}

/**
 * The durable run a handler executes in, as `ctx.run` (`null` outside a run). Every write is
 * fenced: once another worker took the run over, it throws `NervaError` LEASE_LOST and the
 * handler's `ctx.signal` aborts.
 *
 * @example
 * runtime.register("refund_agent", async (input, ctx) => {
 *   const order = await ctx.run!.step("load-order", () => loadOrder(input.args.orderId));
 *   return (await ctx.run!.step("refund", () => refund(order, ctx.signal))).id;
 * });
 */
export interface RunContext {
  readonly runId: string;
  /** 1-based attempt number (retries count; reclaims and resumes do not). */
  readonly attempt: number;
  /** The fence of this worker's lease; it grows with every claim. */
  readonly fence: number;
  /**
   * Runs `fn` once and commits its JSON result before returning it. Any later execution of the
   * run, on any worker, gets the committed value without running `fn`. A key used twice in one
   * execution becomes `key#2`, `key#3`…; so a key has no `#` (and does not start with `$`):
   * INVALID_INPUT otherwise.
   */
  step<T>(key: string, fn: () => T | Promise<T>): Promise<T>;
  /**
   * The answer given to `queue.resume(id, value, { key })`. Without one yet, the run pauses,
   * this call throws (let it propagate: the handler unwinds) and the lease is released; after
   * the resume the handler runs again, its committed steps skipped, and this call returns.
   * The key follows the rules of step keys; used again, it becomes `key#2`, `key#3`…
   */
  waitForInput<T = JsonValue>(key: string, options?: WaitForInputOptions): Promise<T>;
  /** Saves a state that later executions read with {@link lastCheckpoint}. */
  checkpoint(state: JsonValue): Promise<void>;
  /** The last checkpoint saved by any execution of this run, or `null`. */
  lastCheckpoint<T = JsonValue>(): T | null;
  /** Appends a custom event (`run.`, `step.` and `output.` are reserved). */
  emit(type: string, data?: Record<string, JsonValue>): Promise<void>;
}

/** The request-local slot holding the durable run a request executes in (see `ctx.run`). */
export const kRunContext = new ContextKey<RunContext>("nerva.run");

/**
 * Writes one of Nerva's own event types (`tool.started`, `tool.completed`) into the run a request
 * executes in: set by the Runner beside {@link kRunContext}, read by the orchestrator's kit, which
 * sits below runs/ and so cannot reach the run's own `record`.
 */
export type RunEventRecorder = (type: string, data: Record<string, JsonValue>) => Promise<void>;

/** The request-local slot holding the {@link RunEventRecorder} of the run a request executes in. */
export const kRunRecorder = new ContextKey<RunEventRecorder>("nerva.run.recorder");

/**
 * Pauses the run a request executes in on a key Nerva derives (`$…`, which no user key can take)
 * and returns its answer once given (see {@link RunContext.waitForInput}: the first call throws
 * and unwinds the handler; after the resume, the call made again returns the answer). Set by the
 * Runner beside {@link kRunRecorder}; the kit pauses a tool call for its approval with it.
 */
export type RunInputAsker = (
  key: `$${string}`,
  options: WaitForInputOptions & { readonly kind: string },
) => Promise<JsonValue>;

/** The request-local slot holding the {@link RunInputAsker} of the run a request executes in. */
export const kRunAsk = new ContextKey<RunInputAsker>("nerva.run.ask");

/**
 * Marks the policy makes in the run a request executes in, so that what it did once for the run
 * is not done again when the run executes again (a resume, a retry, a reclaim by another worker):
 * a request's rate-limit admissions, the approvals its gated calls used. A mark is a step of the
 * run under a key Nerva derives (`$…`),
 * numbered by its uses in one execution as step keys are (`key`, then `key#2`…), so the n-th
 * use of a key in an execution finds the n-th use of an earlier one; the uses a step's body took
 * are committed with the step and taken again by an execution that skips it. Set by the Runner beside
 * {@link kRunContext}; read by the policy, which sits below runs/.
 */
export interface RunMarks {
  /**
   * The numbered key of the next use of mark `key` in this execution, or `null` when an
   * execution of this run already made that mark. `take` uses it up (the next call gets the use
   * after it); without it, the call only looks.
   */
  nextMark(key: `$${string}`, take: boolean): string | null;
  /**
   * What an execution of this run made the next use of mark `key` with, taking that use; or
   * `undefined` when none made it, taking nothing (then {@link nextMark} numbers the use).
   */
  madeMark(key: `$${string}`): JsonValue | undefined;
  /**
   * Makes mark `key`, as {@link nextMark} numbered it, holding `value` (`true` by default):
   * committed in the run before it resolves.
   */
  mark(key: string, value?: JsonValue): Promise<void>;
}

/** The request-local slot holding the {@link RunMarks} of the run a request executes in. */
export const kRunMarks = new ContextKey<RunMarks>("nerva.run.marks");

/**
 * Marks an error thrown to unwind a handler on purpose (a run pausing to wait for input): it ends
 * the call but is no failure of the handler, so a circuit breaker does not count it.
 */
export const kUnwind: unique symbol = Symbol.for("nerva.unwind");

/** Whether `err` unwinds a handler on purpose (see {@link kUnwind}). */
export function isUnwind(err: unknown): boolean {
  return (
    typeof err === "object" && err !== null && (err as { [kUnwind]?: unknown })[kUnwind] === true
  );
}
