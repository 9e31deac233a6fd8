import { hostname } from "node:os";
import { z } from "zod";
import { randomBytes } from "node:crypto";
import { setMaxListeners } from "node:events";
import { ExecContext } from "../context/exec-context.js";
import { newRequestId } from "../context/ids.js";
import { ErrorCode, NervaError, parseOrThrow } from "../errors.js";
import { requireObjectOptions } from "../internal/object-options.js";
import { safeListener } from "../internal/report.js";
import { messageOf } from "../runtime/results.js";
import { RunnerOptionsSchema, type RunnerOptions } from "./options.js";
import {
  classifyFailure,
  executeAttempt,
  persist,
  sleep,
  type AttemptScope,
  type Execution,
} from "./run-attempt.js";
import { ActiveRun } from "./run-context.js";
import { kRunAsk, kRunContext, kRunMarks, kRunRecorder } from "../context/run-slot.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import type { AgentHandler, AgentRuntime } from "../runtime/types.js";
import { InMemoryRunStore } from "./memory/in-memory-store.js";
import { RunQueue } from "./run-queue.js";
import type { ClaimRequest, ClaimedRun, RunStore } from "./store.js";
import { RunStatus, type RunError, type RunEventType } from "./types.js";
import type { TraceSink } from "../tracing/sink.js";

export { classifyFailure };

const StopOptionsSchema = z.object({ graceSeconds: z.number().finite().optional() });

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
  readonly #traceSink: TraceSink | null;
  /** What each attempt uses of this Runner (run-attempt.ts). */
  readonly #attempt: AttemptScope;
  readonly #active = new Map<string, { execution: Execution; done: Promise<void> }>();
  #loop: Promise<void> | null = null;
  #stopping: AbortController | null = null;
  /** Claims in flight: each holds a slot, so active + claiming never exceeds `concurrency`. */
  #claiming = 0;
  #slotWaiters: (() => void)[] = [];

  constructor(options: RunnerOptions & { onError?: (err: unknown) => void }) {
    requireObjectOptions(
      options,
      ErrorCode.INVALID_OPTIONS,
      "Pass { runtime: AgentRuntime or handlers: { name: handler }, queue?: RunQueue, ... }.",
    );
    const { onError, ...rest } = options;
    const o = parseOrThrow(
      RunnerOptionsSchema,
      rest,
      ErrorCode.INVALID_OPTIONS,
      "options",
      "Pass { runtime: AgentRuntime or handlers: { name: handler }, queue?: RunQueue (default: its own, in memory), concurrency?, leaseSeconds?, heartbeatSeconds? (< leaseSeconds), workerId?, traceSink? }.",
    );
    const queue = o.queue ?? new RunQueue({ store: new InMemoryRunStore() });
    if (!(queue instanceof RunQueue)) {
      throw new NervaError(
        ErrorCode.INVALID_OPTIONS,
        "Invalid options.queue: must be a RunQueue.",
        {
          issues: [{ path: "options.queue", message: "must be a RunQueue" }],
        },
      );
    }
    this.#queue = queue;
    this.#store = queue.store;
    this.#runtime = o.runtime ?? inProcess(o.handlers ?? {});
    this.#concurrency = o.concurrency;
    this.#leaseMs = Math.round(o.leaseSeconds * 1000);
    this.#heartbeatMs = Math.round(o.heartbeatSeconds * 1000);
    this.#idleMs = Math.round(
      Math.min(o.idleWaitSeconds ?? o.heartbeatSeconds, o.heartbeatSeconds) * 1000,
    );
    this.workerId = o.workerId ?? `${hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`;
    this.#onError = safeListener(onError, "the Runner's onError");
    this.#traceSink = o.traceSink ?? null;
    this.#attempt = {
      store: this.#store,
      runtime: this.#runtime,
      leaseMs: this.#leaseMs,
      heartbeatMs: this.#heartbeatMs,
      onError: this.#onError,
      nextClaim: () => {
        const signal = this.#stopping?.signal;
        return signal === undefined || signal.aborted ? null : this.#claimRequest(0, signal);
      },
      begin: (claimed) => this.#beginClaimed(claimed),
    };
  }

  /** The queue whose runs this worker executes (its own unless one was given). */
  get queue(): RunQueue {
    return this.#queue;
  }

  /** What executes the runs' handlers (an InProcessRuntime of `handlers` when given those). */
  get runtime(): AgentRuntime {
    return this.#runtime;
  }

  /** How many runs this worker executes right now. */
  get activeCount(): number {
    return this.#active.size;
  }

  /** Starts claiming runs. Calling it again while running does nothing. */
  async start(): Promise<void> {
    if (this.#loop !== null) return;
    this.#stopping = new AbortController();
    // Each claimer may listen for the stop while it waits for a run.
    setMaxListeners(Math.max(10, this.#concurrency + 2), this.#stopping.signal);
    this.#loop = this.#claimLoop(this.#stopping.signal);
  }

  /**
   * Stops claiming, lets running runs finish for up to `graceSeconds`, then aborts the rest and
   * hands them back (pending again, the attempt not counted).
   */
  async stop(options: { graceSeconds?: number } = {}): Promise<void> {
    const o = parseOrThrow(
      StopOptionsSchema,
      options,
      ErrorCode.INVALID_INPUT,
      "options",
      "Pass { graceSeconds?: a finite number of seconds }.",
    );
    const graceMs = Math.max(0, (o.graceSeconds ?? 30) * 1000);
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
   * Up to 4 claimers (or the store's `claimConcurrency`) run at once, each holding a free slot
   * while it claims: a claim costs a few store round trips, and overlapping them keeps the slots
   * busy (stores serialise what must be).
   */
  async #claimLoop(signal: AbortSignal): Promise<void> {
    const claimers = Math.min(this.#concurrency, this.#store.claimConcurrency ?? 4);
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
        claimed = await this.#store.claim(this.#claimRequest(this.#idleMs / 1000, signal));
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

  #claimRequest(waitSeconds: number, signal: AbortSignal): ClaimRequest {
    return {
      queue: this.#queue.name,
      workerId: this.workerId,
      leaseSeconds: this.#leaseMs / 1000,
      waitSeconds,
      heartbeatSeconds: this.#heartbeatMs / 1000,
      signal,
    };
  }

  /** A run claimed with a finish: started in the freed slot, or handed back when stopping. */
  #beginClaimed(claimed: ClaimedRun): void {
    if (this.#stopping?.signal.aborted !== false) {
      void this.#store.release(claimed.lease).catch((err: unknown) => this.#onError(err));
      return;
    }
    this.#begin(claimed);
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
        // Same trace as the enqueuer, current span its `runs.enqueue` span: the run nests there.
        {
          stream: {
            push: (chunk) => active.delta(chunk),
            pushReasoning: (chunk) => active.delta(chunk, "reasoning"),
          },
          traceSink: this.#traceSink,
        },
      );
    } catch (err) {
      // A stored context this code cannot read (written by another version, or edited): the run
      // fails now rather than being reclaimed until maxReclaims.
      const error: RunError = {
        code: ErrorCode.INVALID_INPUT,
        message: `Run ${run.id}: its stored context cannot be restored (${messageOf(err)}).`,
        retriable: false,
      };
      void persist(this.#attempt, active, () =>
        this.#store.finish(active.lease, { status: RunStatus.FAILED, result: null, error }),
      ).catch((e: unknown) => this.#onError(e));
      return;
    }
    ctx.setLocal(kRunContext, active);
    ctx.setLocal(kRunRecorder, (type, data) => active.record(type as RunEventType, data));
    ctx.setLocal(kRunAsk, (key, o) => active.askDerived(key, o));
    ctx.setLocal(kRunMarks, active);
    const execution: Execution = {
      active,
      ctx,
      releasing: false,
      cancelled: false,
      beating: false,
    };
    active.onLost = (err) => ctx.cancel(err);
    const done = executeAttempt(this.#attempt, execution, claimed).then(
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
}

/** An InProcessRuntime with `handlers` registered, for a Runner given handlers. */
function inProcess(handlers: Readonly<Record<string, AgentHandler>>): AgentRuntime {
  const runtime = new InProcessRuntime();
  for (const [name, handler] of Object.entries(handlers)) runtime.register(name, handler);
  return runtime;
}
