import type { AgentResult, JsonValue } from "../types/agent.js";
import type { ExecContextWire } from "../types/context-wire.js";
import type { TokenUsageWire } from "../types/usage.js";
import type {
  RetryPolicy,
  RunError,
  RunEvent,
  RunInput,
  RunPage,
  RunPause,
  RunRecord,
  RunStatus,
} from "./types.js";

/** What `RunStore.create` needs: everything of a new run the store does not fill itself. */
export interface NewRun {
  readonly id: string;
  readonly queue: string;
  readonly handlers: readonly string[];
  readonly input: RunInput;
  readonly retry: RetryPolicy;
  readonly maxReclaims: number;
  readonly priority: number;
  readonly timeoutSeconds: number | null;
  readonly idempotencyKey: string | null;
  readonly context: ExecContextWire;
  /** How long from now before the run may be claimed. */
  readonly delaySeconds: number;
  /**
   * Optional: the run starts paused on this pause instead of pending (`run.enqueued` then
   * `run.paused`), and waits for `resume` before any worker may claim it: a question that is
   * the whole of the run, such as a policy approval.
   */
  readonly pause?: RunPause;
}

/**
 * What `RunStore.finishPending` is told: how the run ends given the answers it was resumed with
 * (JSON text by pause key), or `null` to end nothing and only read them.
 */
export type PendingOutcome = (
  answers: ReadonlyMap<string, string>,
  run: RunRecord,
) => RunOutcome | null;

/** The proof of holding a run: every worker write carries it and is refused when it is stale. */
export interface LeaseRef {
  readonly runId: string;
  readonly workerId: string;
  readonly fence: number;
}

/** A run a worker just claimed, with what a replay needs. */
export interface ClaimedRun {
  readonly run: RunRecord;
  readonly lease: LeaseRef;
  /** Committed step values (JSON text) by step key. */
  readonly steps: ReadonlyMap<string, string>;
  /** Values given to `resume`, by pause key (JSON text). */
  readonly inputs: ReadonlyMap<string, string>;
  /** The last checkpoint (JSON text), or `null`. */
  readonly checkpoint: string | null;
}

/** Options of `RunStore.claim`. Durations are in seconds (fractions allowed). */
export interface ClaimRequest {
  readonly queue: string;
  readonly workerId: string;
  readonly leaseSeconds: number;
  /** Wait up to this long for a claimable run before answering `null`. */
  readonly waitSeconds: number;
  /** Aborting it ends the wait with `null`. */
  readonly signal?: AbortSignal;
  /** How often the claimer heartbeats (stores that detect lost workers themselves use it). */
  readonly heartbeatSeconds?: number;
}

/**
 * How a worker ends an attempt. `usage`: the tokens and cost the attempt spent, written into the
 * final event (`data.usage`) so that a reader of the history (a chat UI) gets it with the end.
 */
export type RunOutcome = (
  | { readonly status: typeof RunStatus.SUCCEEDED; readonly result: AgentResult }
  | {
      readonly status:
        typeof RunStatus.FAILED | typeof RunStatus.TIMED_OUT | typeof RunStatus.CANCELLED;
      readonly result: AgentResult | null;
      readonly error: RunError;
    }
) & { readonly usage?: TokenUsageWire };

/** Filter of `RunStore.list`. */
export interface RunListQuery {
  readonly queue: string;
  readonly status?: RunStatus;
  readonly handler?: string;
  readonly userId?: string;
  readonly limit: number;
  readonly cursor?: string | null;
}

/**
 * Where runs, their steps and their history live. Every write a worker makes is one atomic call
 * that checks the caller's fence (`LeaseRef`) and appends the event it causes; a stale caller
 * gets `NervaError` LEASE_LOST and nothing it sent is kept. Durations are seconds (`…Seconds`);
 * points in time are epoch milliseconds (`…At`), as in the records. `describeRunStoreContract` from
 * `@nerva/core/testing` checks an implementation.
 *
 * @example
 * const queue = new RunQueue({ store: new InMemoryRunStore(), name: "default" });
 */
export interface RunStore {
  /**
   * Optional: how many claims a Runner may have in flight at once (default 4). A store whose
   * claim is a network round trip that other claims can overlap (Redis) raises it.
   */
  readonly claimConcurrency?: number;
  /** Creates a run, or returns the queue's run with the same idempotency key (`created: false`). */
  create(run: NewRun): Promise<{ run: RunRecord; created: boolean }>;
  get(runId: string): Promise<RunRecord | null>;
  list(query: RunListQuery): Promise<RunPage>;
  /**
   * Takes the most urgent claimable run of `queue` (lowest priority, then earliest
   * `availableAt`): a pending run that is due, or a running run whose lease expired (a reclaim).
   * Increments its fence. Waits up to `waitSeconds` for one; `null` when none came.
   */
  claim(request: ClaimRequest): Promise<ClaimedRun | null>;
  /**
   * Optional: `finish`, then a claim of `next` (which does not wait) in the same call, for a store
   * where that saves a round trip. A Runner whose slot frees with the finish uses it instead of
   * `finish` followed by `claim`; `next` is `null` when no run was due.
   */
  finishAndClaim?(
    lease: LeaseRef,
    outcome: RunOutcome,
    next: ClaimRequest,
  ): Promise<{ run: RunRecord; next: ClaimedRun | null }>;
  /**
   * Extends the lease to `leaseSeconds` from now; says whether a cancel was asked. LEASE_LOST
   * when it is stale.
   */
  heartbeat(lease: LeaseRef, leaseSeconds: number): Promise<{ cancelRequested: boolean }>;
  /** Appends an event (step.started, output.delta, custom) for the lease holder. */
  append(lease: LeaseRef, type: string, data: Record<string, JsonValue>): Promise<RunEvent>;
  /**
   * Commits a step's value (JSON text) with its `step.completed` event. A key committed before
   * keeps its first value, which is returned.
   */
  commitStep(lease: LeaseRef, key: string, value: string): Promise<string>;
  /**
   * Optional: `append(lease, "step.started", { key })` (the event dated `startedAt`, epoch ms)
   * followed by `commitStep(lease, key, value)`, as one atomic write. A worker whose store has it
   * writes the start of a step that finishes within the same turn of the event loop together with
   * its commit (one transaction per step instead of two); without it, it writes them apart.
   */
  commitStartedStep?(
    lease: LeaseRef,
    key: string,
    value: string,
    startedAt: number,
  ): Promise<string>;
  checkpoint(lease: LeaseRef, state: string): Promise<void>;
  /** The run becomes paused and its lease is released. */
  pause(lease: LeaseRef, pause: RunPause): Promise<RunRecord>;
  /** Ends the run. A run whose cancel was asked ends `cancelled`, whatever `outcome` says. */
  finish(lease: LeaseRef, outcome: RunOutcome): Promise<RunRecord>;
  /** Back to pending after `delaySeconds` with the next attempt number. */
  retry(lease: LeaseRef, delaySeconds: number, error: RunError): Promise<RunRecord>;
  /** Back to pending now, the attempt not counted (a worker stopping). */
  release(lease: LeaseRef): Promise<RunRecord>;
  /** Pending and paused runs end `cancelled`; a running one is flagged for its holder. */
  cancel(runId: string, reason: string | null): Promise<RunRecord>;
  /** A paused run becomes pending with `value` (JSON text) recorded under its pause key. */
  resume(runId: string, key: string | null, value: string): Promise<RunRecord>;
  /**
   * Ends a pending run that no worker holds, in one atomic step with reading its
   * answers: for a run nothing executes once it is answered (a policy approval, used by the
   * request it allows). `outcome` is called with the answers (maybe more than once, so it must
   * have no side effects); the run ends as it says, or is left as it is when it says `null`.
   * INVALID_STATE when the run is not pending, so of concurrent callers one ends it; NOT_FOUND
   * for an unknown run.
   */
  finishPending(
    runId: string,
    outcome: PendingOutcome,
  ): Promise<{ run: RunRecord; answers: ReadonlyMap<string, string> }>;
  /** A failed, timed-out or cancelled run is queued again with fresh attempts, its steps kept. */
  redrive(runId: string): Promise<RunRecord>;
  /**
   * Deletes the queue's finished runs (and their steps and history) whose `finishedAt` is before
   * `finishedBeforeAt` (epoch ms); answers how many.
   */
  prune(queue: string, finishedBeforeAt: number): Promise<number>;
  /** Events with `seq > afterSeq`, in order, at most `limit`. */
  readEvents(runId: string, afterSeq: number, limit: number): Promise<RunEvent[]>;
  /**
   * Resolves when the run has an event after `afterSeq`, was deleted, `signal` aborted or
   * `timeoutSeconds` passed: a wake-up, never a promise of data (read again after it).
   */
  waitForEvents(
    runId: string,
    afterSeq: number,
    options: { signal?: AbortSignal; timeoutSeconds?: number },
  ): Promise<void>;
  /**
   * Optional: resolves when the run's status is no longer `status`, the run was deleted, `signal`
   * aborted or `timeoutSeconds` passed: a wake-up like {@link waitForEvents}, which the events that
   * leave the status as it is (steps, output, custom events) do not cause. `RunQueue.wait` uses
   * it when present, so a waiter is not woken by every step of a long run; without it, it wakes
   * on every event and reads the run again. With `until`, a change to a status outside it does
   * not wake the waiter either: a waiter for the end of a run sleeps through `running`.
   */
  waitForStatusChange?(
    runId: string,
    status: RunStatus,
    options: { signal?: AbortSignal; timeoutSeconds?: number; until?: readonly RunStatus[] },
  ): Promise<void>;
  /**
   * Optional: calls `listener` as soon as a cancel of `runId` is asked, from any process, so the
   * holder need not wait for its next heartbeat. Returns a function that stops listening.
   */
  watchCancel?(runId: string, listener: () => void): () => void;
  close(): Promise<void>;
}
