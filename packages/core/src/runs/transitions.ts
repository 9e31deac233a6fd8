import { ErrorCode, NervaError } from "../errors.js";
import type { JsonValue } from "../types/agent.js";
import type { LeaseRef, NewRun, RunOutcome } from "./store.js";
import {
  RunEventType,
  RunStatus,
  isFinalStatus,
  type RunError,
  type RunEvent,
  type RunPause,
  type RunRecord,
} from "./types.js";

// The state machine of a run, as pure functions over a record: the in-memory and SQLite stores
// load a record, apply one of these and write the record and the events back in one transaction,
// so both behave the same. (The Redis store runs the same rules as Lua scripts.) The status
// changes they make are the table of status-transitions.ts, exported for other stores.

/** A record being changed. */
export type Draft = { -readonly [K in keyof RunRecord]: RunRecord[K] };

/** An event before the store writes it (its seq is already assigned). */
export interface EventDraft {
  readonly seq: number;
  readonly type: string;
  readonly at: number;
  readonly attempt: number;
  readonly data: Record<string, JsonValue>;
}

/** The event `e` of run `runId` (fields written out: a literal spreading `e` is slow in V8 11). */
export function runEvent(runId: string, e: EventDraft): RunEvent {
  return { runId, seq: e.seq, type: e.type, at: e.at, attempt: e.attempt, data: e.data };
}

/** What a transition produced: the new record and its events, in order. */
export interface Transition {
  readonly run: Draft;
  readonly events: EventDraft[];
}

function push(t: Transition, type: string, data: Record<string, JsonValue>, at: number): void {
  t.run.lastSeq += 1;
  t.events.push({ seq: t.run.lastSeq, type, at, attempt: t.run.attempt, data });
}

function start(run: RunRecord): Transition {
  return { run: { ...run }, events: [] };
}

/** The record of a new run and its `run.enqueued` event. */
export function createRun(init: NewRun, now: number): Transition {
  const run: Draft = {
    id: init.id,
    queue: init.queue,
    handlers: init.handlers,
    input: init.input,
    status: RunStatus.PENDING,
    attempt: 1,
    maxAttempts: init.retry.maxAttempts,
    retry: init.retry,
    result: null,
    error: null,
    pause: null,
    lease: null,
    fence: 0,
    cancelRequested: false,
    userId: init.context.user_id,
    traceId: init.context.trace_id,
    idempotencyKey: init.idempotencyKey,
    priority: init.priority,
    timeoutSeconds: init.timeoutSeconds,
    reclaims: 0,
    maxReclaims: init.maxReclaims,
    lastSeq: 0,
    context: init.context,
    createdAt: now,
    startedAt: null,
    finishedAt: null,
    availableAt: now + Math.round(init.delaySeconds * 1000),
  };
  const t: Transition = { run, events: [] };
  push(
    t,
    RunEventType.ENQUEUED,
    { handlers: [...init.handlers], priority: init.priority, availableAt: run.availableAt },
    now,
  );
  if (init.pause !== undefined) {
    run.status = RunStatus.PAUSED;
    run.pause = init.pause;
    push(t, RunEventType.PAUSED, pausedData(init.pause), now);
  }
  return t;
}

/** The data of a `run.paused` event: what the pause asks and who may answer. */
function pausedData(pause: RunPause): Record<string, JsonValue> {
  return {
    key: pause.key,
    prompt: pause.prompt,
    kind: pause.kind,
    data: { ...pause.data },
    ...(pause.answeredBy === undefined
      ? {}
      : { answeredBy: JSON.parse(JSON.stringify(pause.answeredBy)) as JsonValue }),
  };
}

/** Whether a worker may claim `run` at `now`: due and pending, or running with an expired lease. */
export function isClaimable(run: RunRecord, now: number): boolean {
  if (run.status === RunStatus.PENDING) return run.availableAt <= now;
  return run.status === RunStatus.RUNNING && run.lease !== null && run.lease.expiresAt <= now;
}

/**
 * Claims `run` for `workerId`: a new fence and lease, `run.started` (after `run.reclaimed` when
 * the previous holder's lease expired). A run taken over more than `maxReclaims` times fails
 * instead (`claimed: false`).
 */
export function claimRun(
  run: RunRecord,
  workerId: string,
  leaseMs: number,
  now: number,
): Transition & { claimed: boolean } {
  const t = start(run);
  const r = t.run;
  if (r.status === RunStatus.RUNNING && r.lease !== null) {
    r.reclaims += 1;
    push(
      t,
      RunEventType.RECLAIMED,
      { previousWorkerId: r.lease.workerId, previousFence: r.lease.fence, reclaims: r.reclaims },
      now,
    );
    if (r.reclaims > r.maxReclaims) {
      const error: RunError = {
        code: ErrorCode.LEASE_LOST,
        message: `Run ${r.id} lost its worker ${r.reclaims} times (maxReclaims ${r.maxReclaims}); it is not taken over again. Find why workers die on it, then redrive it.`,
        retriable: false,
      };
      r.lease = null;
      end(t, RunStatus.FAILED, null, error, now);
      return { ...t, claimed: false };
    }
  }
  r.fence += 1;
  r.status = RunStatus.RUNNING;
  r.lease = { workerId, fence: r.fence, expiresAt: now + leaseMs };
  r.startedAt ??= now;
  push(t, RunEventType.STARTED, { fence: r.fence, workerId }, now);
  return { ...t, claimed: true };
}

/**
 * Throws LEASE_LOST unless `lease` is the live lease of `run`. Checked by every worker write.
 *
 * @example
 * checkFence(run, lease);
 */
export function checkFence(run: RunRecord | null | undefined, lease: LeaseRef): RunRecord {
  if (
    run === null ||
    run === undefined ||
    run.status !== RunStatus.RUNNING ||
    run.lease === null ||
    run.lease.fence !== lease.fence ||
    run.lease.workerId !== lease.workerId
  ) {
    throw leaseLost(lease, run ?? null);
  }
  return run;
}

/** The LEASE_LOST error for a stale `lease`. */
export function leaseLost(lease: LeaseRef, run: RunRecord | null): NervaError {
  const now =
    run === null
      ? "no longer exists"
      : run.status === RunStatus.RUNNING && run.lease !== null
        ? `is held by ${run.lease.workerId} with fence ${run.lease.fence}`
        : `is ${run.status}`;
  return new NervaError(
    ErrorCode.LEASE_LOST,
    `Run ${lease.runId}: worker ${lease.workerId} (fence ${lease.fence}) lost its lease; the run ${now}. Its write was refused.`,
    { details: { runId: lease.runId, fence: lease.fence, workerId: lease.workerId } },
  );
}

/** Extends the lease of a fenced holder. No event: a heartbeat is not a transition. */
export function heartbeatRun(run: RunRecord, lease: LeaseRef, leaseMs: number, now: number): Draft {
  checkFence(run, lease);
  const r: Draft = { ...run };
  r.lease = { workerId: lease.workerId, fence: lease.fence, expiresAt: now + leaseMs };
  return r;
}

/** Appends one event for a fenced holder. */
export function appendEvent(
  run: RunRecord,
  lease: LeaseRef,
  type: string,
  data: Record<string, JsonValue>,
  now: number,
): Transition {
  checkFence(run, lease);
  const t = start(run);
  push(t, type, data, now);
  return t;
}

/**
 * A step's `step.started` (dated `startedAt`) and, unless the step was committed before,
 * `step.completed`, for a fenced holder: `appendEvent` and a step commit as one transition.
 */
export function startedStepEvents(
  run: RunRecord,
  lease: LeaseRef,
  key: string,
  startedAt: number,
  fresh: boolean,
  now: number,
): Transition {
  checkFence(run, lease);
  const t = start(run);
  push(t, RunEventType.STEP_STARTED, { key }, Math.min(startedAt, now));
  if (fresh) push(t, RunEventType.STEP_COMPLETED, { key }, now);
  return t;
}

/** Writes the final status, result, error and event, and drops the lease. */
function end(
  t: Transition,
  status: RunStatus,
  result: RunRecord["result"],
  error: RunError | null,
  now: number,
  extra: Record<string, JsonValue> = {},
): void {
  const r = t.run;
  r.status = status;
  r.result = result;
  r.error = error;
  r.lease = null;
  r.pause = null;
  r.finishedAt = now;
  const type =
    status === RunStatus.SUCCEEDED
      ? RunEventType.SUCCEEDED
      : status === RunStatus.CANCELLED
        ? RunEventType.CANCELLED
        : status === RunStatus.TIMED_OUT
          ? RunEventType.TIMED_OUT
          : RunEventType.FAILED;
  const data: Record<string, JsonValue> =
    error === null
      ? { output: result?.output ?? "" }
      : { error: { code: error.code, message: error.message, retriable: error.retriable } };
  push(t, type, { ...data, ...extra }, now);
}

function cancelledError(run: RunRecord): RunError {
  return {
    code: ErrorCode.CANCELLED,
    message: `Run ${run.id} was cancelled.`,
    retriable: false,
  };
}

/** Ends a run for its fenced holder; a cancel asked before wins over any outcome. */
export function finishRun(
  run: RunRecord,
  lease: LeaseRef,
  outcome: RunOutcome,
  now: number,
): Transition {
  checkFence(run, lease);
  const t = start(run);
  if (run.cancelRequested && outcome.status !== RunStatus.CANCELLED) {
    end(t, RunStatus.CANCELLED, outcome.result, cancelledError(run), now);
  } else if (outcome.status === RunStatus.SUCCEEDED) {
    end(t, RunStatus.SUCCEEDED, outcome.result, null, now);
  } else {
    end(t, outcome.status, outcome.result, outcome.error, now);
  }
  return t;
}

/** Pauses a run for its fenced holder (cancelled instead when a cancel was asked). */
export function pauseRun(
  run: RunRecord,
  lease: LeaseRef,
  pause: RunPause,
  now: number,
): Transition {
  checkFence(run, lease);
  const t = start(run);
  if (run.cancelRequested) {
    end(t, RunStatus.CANCELLED, null, cancelledError(run), now);
    return t;
  }
  t.run.status = RunStatus.PAUSED;
  t.run.lease = null;
  t.run.pause = pause;
  push(t, RunEventType.PAUSED, pausedData(pause), now);
  return t;
}

/** Schedules the next attempt after `delayMs` for the fenced holder. */
export function retryRun(
  run: RunRecord,
  lease: LeaseRef,
  delayMs: number,
  error: RunError,
  now: number,
): Transition {
  checkFence(run, lease);
  const t = start(run);
  if (run.cancelRequested) {
    end(t, RunStatus.CANCELLED, null, cancelledError(run), now);
    return t;
  }
  const r = t.run;
  r.status = RunStatus.PENDING;
  r.lease = null;
  r.error = error;
  r.attempt += 1;
  r.availableAt = now + delayMs;
  push(
    t,
    RunEventType.RETRYING,
    {
      delaySeconds: delayMs / 1000,
      error: { code: error.code, message: error.message, retriable: error.retriable },
    },
    now,
  );
  return t;
}

/** Hands the run back (pending at once, same attempt): a worker stopping. */
export function releaseRun(run: RunRecord, lease: LeaseRef, now: number): Transition {
  checkFence(run, lease);
  const t = start(run);
  if (run.cancelRequested) {
    end(t, RunStatus.CANCELLED, null, cancelledError(run), now);
    return t;
  }
  t.run.status = RunStatus.PENDING;
  t.run.lease = null;
  t.run.availableAt = now;
  push(t, RunEventType.RELEASED, { workerId: lease.workerId }, now);
  return t;
}

/**
 * Cancels: pending and paused runs end at once; a running run is flagged (its holder sees the
 * flag on its next heartbeat); a final run is left as it is (no event).
 */
export function cancelRun(run: RunRecord, reason: string | null, now: number): Transition {
  const t = start(run);
  if (isFinalStatus(run.status) || run.cancelRequested) return t;
  push(t, RunEventType.CANCEL_REQUESTED, { reason }, now);
  if (run.status === RunStatus.RUNNING) {
    t.run.cancelRequested = true;
  } else {
    end(
      t,
      RunStatus.CANCELLED,
      null,
      { ...cancelledError(run), message: cancelMessage(run, reason) },
      now,
    );
  }
  return t;
}

function cancelMessage(run: RunRecord, reason: string | null): string {
  return `Run ${run.id} was cancelled${reason === null ? "" : `: ${reason}`}.`;
}

/** The pause key `resume` answers, checking the run is paused and `key` (if given) matches. */
export function resumeKey(run: RunRecord, key: string | null): string {
  if (run.status !== RunStatus.PAUSED || run.pause === null) {
    throw new NervaError(
      ErrorCode.INVALID_STATE,
      `Run ${run.id} is ${run.status}, not paused: only a paused run can be resumed. Wait for its run.paused event (or status "paused") first.`,
      { details: { runId: run.id, status: run.status } },
    );
  }
  if (key !== null && key !== run.pause.key) {
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      `Invalid options.key: run ${run.id} waits for "${run.pause.key}", not "${key}". Pass { key: "${run.pause.key}" } or omit it.`,
      { issues: [{ path: "options.key", message: `must be "${run.pause.key}"` }] },
    );
  }
  return run.pause.key;
}

/** A paused run becomes pending again (the store records the value under the key). */
export function resumeRun(run: RunRecord, key: string, now: number): Transition {
  const t = start(run);
  t.run.status = RunStatus.PENDING;
  t.run.pause = null;
  t.run.availableAt = now;
  push(t, RunEventType.RESUMED, { key }, now);
  return t;
}

/**
 * Ends a pending run nobody holds with `outcome` (see `RunStore.finishPending`), or leaves it as
 * it is for `null`. INVALID_STATE when it is not pending: someone ended, claimed or cancelled it.
 */
export function finishPendingRun(
  run: RunRecord,
  decide: () => RunOutcome | null,
  now: number,
): Transition {
  if (run.status !== RunStatus.PENDING) {
    throw new NervaError(
      ErrorCode.INVALID_STATE,
      `Run ${run.id} is ${run.status}, not pending: it was already finished, claimed or cancelled.`,
      { details: { runId: run.id, status: run.status } },
    );
  }
  const outcome = decide();
  // Nothing to write: the record itself, so a store sees that nothing changed.
  if (outcome === null) return { run: run as Draft, events: [] };
  const t = start(run);
  if (outcome.status === RunStatus.SUCCEEDED)
    end(t, RunStatus.SUCCEEDED, outcome.result, null, now);
  else end(t, outcome.status, outcome.result, outcome.error, now);
  return t;
}

/** Queues a failed, timed-out or cancelled run again with fresh attempts. */
export function redriveRun(run: RunRecord, now: number): Transition {
  if (
    run.status !== RunStatus.FAILED &&
    run.status !== RunStatus.TIMED_OUT &&
    run.status !== RunStatus.CANCELLED
  ) {
    throw new NervaError(
      ErrorCode.INVALID_STATE,
      `Run ${run.id} is ${run.status}: only failed, timed_out or cancelled runs can be redriven.`,
      { details: { runId: run.id, status: run.status } },
    );
  }
  const t = start(run);
  const r = t.run;
  r.status = RunStatus.PENDING;
  r.attempt = 1;
  r.reclaims = 0;
  r.result = null;
  r.error = null;
  r.pause = null;
  r.cancelRequested = false;
  r.finishedAt = null;
  r.availableAt = now;
  push(t, RunEventType.REDRIVEN, {}, now);
  return t;
}

/** The NOT_FOUND error for an unknown run id. */
export function runNotFound(runId: string): NervaError {
  return new NervaError(
    ErrorCode.NOT_FOUND,
    `Run "${runId}" does not exist (or was pruned). Check the id returned by enqueue().`,
    { details: { runId } },
  );
}

/**
 * The INVALID_STATE error of a claim on a closed store: a claim that returned `null` at once
 * would make a Runner on a closed store spin without pause.
 */
export function closedStore(): NervaError {
  return new NervaError(
    ErrorCode.INVALID_STATE,
    "This run store is closed: stop the Runner (runner.stop()) before closing its store.",
  );
}
