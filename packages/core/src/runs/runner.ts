import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import { ExecContext } from "../context/exec-context.js";
import { newRequestId } from "../context/ids.js";
import { ErrorCode, NervaError, isNervaError, parseOrThrow } from "../errors.js";
import { errorResult, messageOf } from "../runtime/results.js";
import type { AgentRuntime } from "../runtime/types.js";
import { ValidatedInput, type AgentResult } from "../types/agent.js";
import { AgentStatus } from "../types/status.js";
import { retryDelaySeconds } from "./backoff.js";
import { RunnerOptionsSchema, type RunnerOptions } from "./options.js";
import { ActiveRun, RunPaused, type ThrownError } from "./run-context.js";
import { kRunContext } from "./run-context-key.js";
import { RunQueue } from "./run-queue.js";
import type { ClaimedRun, RunOutcome, RunStore } from "./store.js";
import { RunStatus, type RunError } from "./types.js";

/** One run this worker is executing. */
interface Execution {
  readonly active: ActiveRun;
  readonly ctx: ExecContext;
  /** The Runner is stopping: hand the run back instead of recording an outcome. */
  releasing: boolean;
  /** A cancel was seen (heartbeat): the run ends `cancelled`. */
  cancelled: boolean;
  beating: boolean;
}

const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal?.aborted === true) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });

/** Why an attempt failed, and whether another attempt may help. */
export function classifyFailure(result: AgentResult, thrown: ThrownError | null): RunError {
  const message = result.error ?? `Handler "${result.handler}" ended with status ${result.status}.`;
  if (result.status === AgentStatus.TIMEOUT) {
    return { code: ErrorCode.TIMEOUT, message, retriable: true };
  }
  if (result.status === AgentStatus.WRONG_HANDLER) {
    return { code: "WRONG_HANDLER", message, retriable: false };
  }
  if (result.data.retriable === false) return { code: "HANDLER_ERROR", message, retriable: false };
  if (thrown !== null && message.includes(thrown.message)) {
    return { code: thrown.code, message, retriable: thrown.retriable };
  }
  return { code: "HANDLER_ERROR", message, retriable: true };
}

/**
 * The worker side of durable runs: claims runs of a {@link RunQueue} while it has capacity,
 * executes each through an `AgentRuntime` with `ctx.run` set, heartbeats its leases, retries,
 * pauses, cancels, and records each outcome with a fenced write.
 *
 * @example
 * const runner = new Runner({ queue, runtime, concurrency: 4, leaseSeconds: 30, heartbeatSeconds: 10 });
 * await runner.start();
 * // ...
 * await runner.stop({ graceSeconds: 10 });
 */
export class Runner {
  readonly workerId: string;
  readonly #queue: RunQueue;
  readonly #store: RunStore;
  readonly #runtime: AgentRuntime;
  readonly #concurrency: number;
  readonly #leaseMs: number;
  readonly #heartbeatMs: number;
  readonly #idleMs: number;
  readonly #onError: (err: unknown) => void;
  readonly #active = new Map<string, { execution: Execution; done: Promise<void> }>();
  #loop: Promise<void> | null = null;
  #stopping: AbortController | null = null;
  /** Claims in flight: each holds a slot, so active + claiming never exceeds `concurrency`. */
  #claiming = 0;
  #slotWaiters: (() => void)[] = [];

  constructor(options: RunnerOptions & { onError?: (err: unknown) => void }) {
    const { onError, ...rest } = options;
    const o = parseOrThrow(
      RunnerOptionsSchema,
      rest,
      ErrorCode.INVALID_OPTIONS,
      "options",
      "Pass { queue: RunQueue, runtime: AgentRuntime, concurrency?, leaseSeconds?, heartbeatSeconds? (< leaseSeconds), workerId? }.",
    );
    if (!(o.queue instanceof RunQueue)) {
      throw new NervaError(
        ErrorCode.INVALID_OPTIONS,
        "Invalid options.queue: must be a RunQueue.",
        {
          issues: [{ path: "options.queue", message: "must be a RunQueue" }],
        },
      );
    }
    this.#queue = o.queue;
    this.#store = o.queue.store;
    this.#runtime = o.runtime;
    this.#concurrency = o.concurrency;
    this.#leaseMs = Math.round(o.leaseSeconds * 1000);
    this.#heartbeatMs = Math.round(o.heartbeatSeconds * 1000);
    this.#idleMs = Math.round(
      Math.min(o.idleWaitSeconds ?? o.heartbeatSeconds, o.heartbeatSeconds) * 1000,
    );
    this.workerId = o.workerId ?? `${hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`;
    this.#onError = onError ?? (() => undefined);
  }

  /** How many runs this worker executes right now. */
  get activeCount(): number {
    return this.#active.size;
  }

  /** Starts claiming runs. Calling it again while running does nothing. */
  async start(): Promise<void> {
    if (this.#loop !== null) return;
    this.#stopping = new AbortController();
    this.#loop = this.#claimLoop(this.#stopping.signal);
  }

  /**
   * Stops claiming, lets running runs finish for up to `graceSeconds`, then aborts the rest and
   * hands them back (pending again, the attempt not counted).
   */
  async stop(options: { graceSeconds?: number } = {}): Promise<void> {
    const graceMs = Math.max(0, (options.graceSeconds ?? 30) * 1000);
    if (this.#loop === null) return;
    this.#stopping?.abort();
    this.#freeSlot();
    await this.#loop;
    this.#loop = null;
    const all = (): Promise<unknown> => Promise.all([...this.#active.values()].map((a) => a.done));
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([all(), new Promise((r) => (timer = setTimeout(r, graceMs)))]);
    clearTimeout(timer);
    for (const { execution } of this.#active.values()) {
      execution.releasing = true;
      execution.ctx.cancel("the worker is stopping; the run goes back to the queue");
    }
    await all();
  }

  /**
   * Up to 4 claimers run at once, each holding a free slot while it claims: a claim costs a few
   * store round trips, and overlapping them keeps the slots busy (stores serialise what must be).
   */
  async #claimLoop(signal: AbortSignal): Promise<void> {
    const claimers = Math.min(this.#concurrency, 4);
    await Promise.all(Array.from({ length: claimers }, () => this.#claimer(signal)));
  }

  #freeSlot(): void {
    for (const wake of this.#slotWaiters.splice(0)) wake();
  }

  async #claimer(signal: AbortSignal): Promise<void> {
    let failures = 0;
    while (!signal.aborted) {
      if (this.#active.size + this.#claiming >= this.#concurrency) {
        await new Promise<void>((resolve) => this.#slotWaiters.push(resolve));
        continue;
      }
      let claimed: ClaimedRun | null;
      this.#claiming += 1;
      try {
        claimed = await this.#store.claim({
          queue: this.#queue.name,
          workerId: this.workerId,
          leaseMs: this.#leaseMs,
          waitMs: this.#idleMs,
          heartbeatMs: this.#heartbeatMs,
          signal,
        });
        failures = 0;
      } catch (err) {
        this.#onError(err);
        failures += 1;
        await sleep(Math.min(2000, 50 * 2 ** failures), signal);
        continue;
      } finally {
        this.#claiming -= 1;
      }
      if (claimed === null) {
        this.#freeSlot();
        continue;
      }
      if (signal.aborted) {
        await this.#store.release(claimed.lease).catch((err: unknown) => this.#onError(err));
        break;
      }
      this.#begin(claimed);
    }
  }

  #begin(claimed: ClaimedRun): void {
    const run = claimed.run;
    const active = new ActiveRun(this.#store, claimed, this.#queue.maxStepBytes);
    const nowSeconds = Date.now() / 1000;
    let ctx: ExecContext;
    try {
      ctx = ExecContext.fromWire(
        {
          ...run.context,
          request_id: newRequestId(),
          created_at: nowSeconds,
          timeout_at: run.timeoutSeconds === null ? null : nowSeconds + run.timeoutSeconds,
          cancelled: false,
        },
        { stream: { push: (chunk) => active.delta(chunk) } },
      );
    } catch (err) {
      // A stored context this code cannot read (written by another version, or edited): the run
      // fails now rather than being reclaimed until maxReclaims.
      const error: RunError = {
        code: ErrorCode.INVALID_INPUT,
        message: `Run ${run.id}: its stored context cannot be restored (${messageOf(err)}).`,
        retriable: false,
      };
      void this.#persist(active, () =>
        this.#store.finish(active.lease, { status: RunStatus.FAILED, result: null, error }),
      ).catch((e: unknown) => this.#onError(e));
      return;
    }
    ctx.setLocal(kRunContext, active);
    const execution: Execution = {
      active,
      ctx,
      releasing: false,
      cancelled: false,
      beating: false,
    };
    active.onLost = (err) => ctx.cancel(err);
    const done = this.#execute(execution, claimed).then(
      () => undefined,
      (err: unknown) => this.#onError(err),
    );
    this.#active.set(run.id, { execution, done });
    void done.finally(() => {
      this.#active.delete(run.id);
      ctx.dispose();
      this.#freeSlot();
    });
  }

  async #execute(execution: Execution, claimed: ClaimedRun): Promise<void> {
    const { active, ctx } = execution;
    const run = claimed.run;
    const beat = setInterval(() => this.#beat(execution), this.#heartbeatMs);
    const unwatch = this.#store.watchCancel?.(run.id, () => this.#cancelled(execution));
    try {
      if (run.cancelRequested) {
        execution.cancelled = true;
      } else {
        const refused = this.#refusal(run.handlers, ctx);
        if (refused !== null) {
          await this.#persist(active, () =>
            this.#store.finish(active.lease, {
              status: RunStatus.FAILED,
              result: null,
              error: refused,
            }),
          );
          return;
        }
      }
      let result: AgentResult | null = null;
      if (!execution.cancelled) {
        try {
          result = await this.#invoke(execution, run.handlers, run.input);
        } catch (err) {
          if (err instanceof RunPaused || active.paused !== null) return;
          active.note(err);
          result = errorResult(run.handlers[run.handlers.length - 1] as string, messageOf(err));
        }
      }
      if (active.lost !== null || active.paused !== null) return;
      if (execution.releasing) {
        await this.#persist(active, () => this.#store.release(active.lease));
        return;
      }
      const outcome = this.#outcome(execution, run, result);
      if (
        outcome.status !== RunStatus.SUCCEEDED &&
        outcome.status !== RunStatus.CANCELLED &&
        outcome.error.retriable &&
        run.attempt < run.maxAttempts
      ) {
        const delayMs = Math.round(retryDelaySeconds(run.retry, run.attempt) * 1000);
        const error = outcome.error;
        await this.#persist(active, () => this.#store.retry(active.lease, delayMs, error));
      } else {
        await this.#persist(active, () => this.#store.finish(active.lease, outcome));
      }
    } finally {
      clearInterval(beat);
      unwatch?.();
    }
  }

  /** A permanent reason not to run `handlers` at all (unknown or not permitted), or `null`. */
  #refusal(handlers: readonly string[], ctx: ExecContext): RunError | null {
    const known = new Set(this.#runtime.handlerNames());
    const unknown = handlers.filter((h) => !known.has(h));
    if (unknown.length > 0) {
      return {
        code: ErrorCode.NOT_FOUND,
        message: `Unknown handler${unknown.length > 1 ? "s" : ""} ${unknown.map((h) => `"${h}"`).join(", ")} on this worker's runtime (registered: ${[...known].sort().join(", ") || "none"}).`,
        retriable: false,
      };
    }
    const denied = handlers.filter((h) => !ctx.permissions.canUseAgent(h));
    if (denied.length > 0) {
      return {
        code: ErrorCode.PERMISSION_DENIED,
        message: `The enqueuer's permissions do not allow agent${denied.length > 1 ? "s" : ""} ${denied.map((h) => `"${h}"`).join(", ")}.`,
        retriable: false,
      };
    }
    return null;
  }

  #outcome(execution: Execution, run: ClaimedRun["run"], result: AgentResult | null): RunOutcome {
    if (execution.cancelled || result === null) {
      return {
        status: RunStatus.CANCELLED,
        result,
        error: {
          code: ErrorCode.CANCELLED,
          message: `Run ${run.id} was cancelled.`,
          retriable: false,
        },
      };
    }
    if (result.status === AgentStatus.SUCCESS) return { status: RunStatus.SUCCEEDED, result };
    const error = classifyFailure(result, execution.active.thrown);
    const timedOut = result.status === AgentStatus.TIMEOUT || execution.ctx.isTimedOut();
    return { status: timedOut ? RunStatus.TIMED_OUT : RunStatus.FAILED, result, error };
  }

  /**
   * Runs one fenced write that ends an attempt. Store outages (UNAVAILABLE) are retried while the
   * lease may still be ours; LEASE_LOST ends it (another worker owns the run now).
   */
  async #persist(active: ActiveRun, write: () => Promise<unknown>): Promise<void> {
    const until = Date.now() + this.#leaseMs;
    for (let n = 0; ; n++) {
      try {
        await write();
        return;
      } catch (err) {
        if (isNervaError(err, ErrorCode.LEASE_LOST)) {
          active.lose(err);
          return;
        }
        if (!isNervaError(err, ErrorCode.UNAVAILABLE) || Date.now() > until) throw err;
        await sleep(Math.min(1000, 25 * 2 ** n));
      }
    }
  }

  /** A cancel was asked: abort the handler; the run will end `cancelled`. */
  #cancelled(execution: Execution): void {
    if (execution.cancelled) return;
    execution.cancelled = true;
    execution.ctx.cancel("the run was cancelled");
  }

  #beat(execution: Execution): void {
    if (execution.beating || execution.active.lost !== null) return;
    execution.beating = true;
    this.#store.heartbeat(execution.active.lease, this.#leaseMs).then(
      ({ cancelRequested }) => {
        execution.beating = false;
        if (cancelRequested) this.#cancelled(execution);
      },
      (err: unknown) => {
        execution.beating = false;
        if (isNervaError(err, ErrorCode.LEASE_LOST)) execution.active.lose(err);
        else this.#onError(err);
      },
    );
  }

  /**
   * Runs the handler, or the chain: each handler's output is the next one's message, every
   * result but the last memoized as a step; a `needs_data`/`needs_credentials` result pauses the
   * run until `resume` brings `{ args }`, merged into the handler's args.
   */
  async #invoke(
    execution: Execution,
    handlers: readonly string[],
    runInput: ClaimedRun["run"]["input"],
  ): Promise<AgentResult> {
    const { active, ctx } = execution;
    let input = new ValidatedInput(
      runInput.message,
      runInput.args,
      runInput.tools,
      runInput.history,
    );
    let result: AgentResult | undefined;
    for (let i = 0; i < handlers.length; i++) {
      const name = handlers[i] as string;
      const last = i === handlers.length - 1;
      const key = `$chain/${i}`;
      const memo = last
        ? undefined
        : active.committed<{ result: AgentResult; args: Record<string, string> }>(key);
      let args = input.args;
      if (memo !== undefined) {
        result = memo.result;
        args = memo.args;
      } else {
        for (const answer of active.takeAnswers<{ args: Record<string, string> }>(key)) {
          args = { ...args, ...answer.args };
        }
        for (;;) {
          const stepCtx = last ? ctx : ctx.fork({ stream: null });
          try {
            result = await this.#runtime.invoke(
              name,
              new ValidatedInput(input.message, args, input.tools, input.history),
              stepCtx,
            );
          } finally {
            if (!last) stepCtx.dispose();
          }
          const asks =
            result.status === AgentStatus.NEEDS_DATA ||
            result.status === AgentStatus.NEEDS_CREDENTIALS;
          if (!asks || ctx.endReason !== null) break;
          const answer = await active.ask<{ args: Record<string, string> }>(
            active.unique("i", key),
            {
              key,
              prompt: result.output || result.error,
              kind: result.status,
              data: result.data,
            },
          );
          args = { ...args, ...answer.args };
        }
        if (result.status !== AgentStatus.SUCCESS) return result;
        const done = { result, args };
        if (!last) await active.memo(key, () => done);
      }
      input = new ValidatedInput(result.output, args, input.tools, input.history);
    }
    return result as AgentResult;
  }
}
