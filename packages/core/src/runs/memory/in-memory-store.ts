import type { JsonValue } from "../../types/agent.js";
import { decodeCursor, encodeCursor, matchesQuery, newerFirst } from "../list-cursor.js";
import type {
  ClaimRequest,
  ClaimedRun,
  LeaseRef,
  NewRun,
  RunListQuery,
  PendingOutcome,
  RunOutcome,
  RunStore,
} from "../store.js";
import {
  cancelRun,
  closedStore,
  checkFence,
  claimRun,
  createRun,
  finishPendingRun,
  finishRun,
  heartbeatRun,
  isClaimable,
  leaseLost,
  pauseRun,
  redriveRun,
  releaseRun,
  resumeKey,
  resumeRun,
  retryRun,
  runEvent,
  runNotFound,
  type Transition,
} from "../transitions.js";
import {
  RunEventType,
  RunStatus,
  isFinalStatus,
  type RunError,
  type RunEvent,
  type RunPage,
  type RunPause,
  type RunRecord,
} from "../types.js";
import { Wakeups, endsStatusWait } from "../wakeups.js";

/**
 * One run: its record, history, step values, answers and checkpoint. A write that only adds
 * events (a step, an event, a checkpoint) leaves the record as it is and the record's `lastSeq`
 * behind its history; `run` catches it up when read, so a run of many steps copies its record
 * once per read instead of once per step.
 */
class Entry {
  #run: RunRecord;
  readonly events: RunEvent[] = [];
  readonly steps = new Map<string, string>();
  readonly inputs = new Map<string, string>();
  checkpoint: string | null = null;

  constructor(run: RunRecord) {
    this.#run = run;
  }

  /** The record, its `lastSeq` the last event's (history is gap-free: seq n at index n - 1). */
  get run(): RunRecord {
    if (this.#run.lastSeq !== this.events.length) {
      this.#run = { ...this.#run, lastSeq: this.events.length };
    }
    return this.#run;
  }

  set run(run: RunRecord) {
    this.#run = run;
  }

  /** The record as last written, `lastSeq` maybe behind: for its other fields (the fence). */
  get stored(): RunRecord {
    return this.#run;
  }
}

/**
 * A {@link RunStore} in this process's memory: for tests and single-process tools. Runs are lost
 * when the process exits; use `SqliteRunStore` (`@nerva/core/sqlite`) or `RedisRunStore`
 * (`@nerva/core/redis`) for runs that must survive it.
 *
 * @example
 * const queue = new RunQueue({ store: new InMemoryRunStore(), name: "default" });
 */
export class InMemoryRunStore implements RunStore {
  readonly #runs = new Map<string, Entry>();
  readonly #byKey = new Map<string, string>();
  readonly #events = new Wakeups();
  readonly #work = new Wakeups();
  /**
   * The pending and running runs of each queue: what claims look through, and what a list of
   * pending or running runs reads, so neither walks every run the store ever held.
   */
  readonly #live = new Map<string, Set<Entry>>();
  /** Waiters for a run's status to change, keyed by run id. */
  readonly #statuses = new Wakeups();
  #closed = false;

  async create(init: NewRun): Promise<{ run: RunRecord; created: boolean }> {
    if (init.idempotencyKey !== null) {
      const existing = this.#byKey.get(`${init.queue}\u0000${init.idempotencyKey}`);
      const entry = existing === undefined ? undefined : this.#runs.get(existing);
      if (entry !== undefined) return { run: entry.run, created: false };
    }
    const t = createRun(init, Date.now());
    const entry = new Entry({ ...t.run, lastSeq: 0 });
    this.#runs.set(init.id, entry);
    if (init.idempotencyKey !== null) {
      this.#byKey.set(`${init.queue}\u0000${init.idempotencyKey}`, init.id);
    }
    this.#apply(entry, t);
    this.#index(entry);
    return { run: entry.run, created: true };
  }

  async get(runId: string): Promise<RunRecord | null> {
    return this.#runs.get(runId)?.run ?? null;
  }

  async list(query: RunListQuery): Promise<RunPage> {
    const after = decodeCursor(query.cursor ?? null);
    const live = query.status === RunStatus.PENDING || query.status === RunStatus.RUNNING;
    const entries = live ? (this.#live.get(query.queue) ?? []) : this.#runs.values();
    const runs = [...entries]
      .map((e) => e.run)
      .filter((r) => matchesQuery(r, query, after))
      .sort(newerFirst);
    const page = runs.slice(0, query.limit);
    const last = page[page.length - 1];
    return {
      runs: page,
      nextCursor: runs.length > query.limit && last !== undefined ? encodeCursor(last) : null,
    };
  }

  async claim(request: ClaimRequest): Promise<ClaimedRun | null> {
    if (this.#closed) throw closedStore();
    const deadline = Date.now() + request.waitSeconds * 1000;
    for (;;) {
      if (this.#closed || request.signal?.aborted === true) return null;
      const now = Date.now();
      let best: Entry | null = null;
      let nextDue = Infinity;
      for (const entry of this.#live.get(request.queue) ?? []) {
        const r = entry.stored;
        if (isClaimable(r, now)) {
          if (best === null || claimOrder(r, best.stored) < 0) best = entry;
        } else if (r.status === RunStatus.PENDING) {
          nextDue = Math.min(nextDue, r.availableAt);
        } else if (r.status === RunStatus.RUNNING && r.lease !== null) {
          nextDue = Math.min(nextDue, r.lease.expiresAt);
        }
      }
      if (best !== null) {
        const t = claimRun(
          best.run,
          request.workerId,
          Math.round(request.leaseSeconds * 1000),
          now,
        );
        this.#apply(best, t);
        if (!t.claimed) continue;
        return {
          run: best.run,
          lease: { runId: best.run.id, workerId: request.workerId, fence: best.run.fence },
          steps: new Map(best.steps),
          inputs: new Map(best.inputs),
          checkpoint: best.checkpoint,
        };
      }
      const wait = Math.min(deadline, nextDue) - now;
      if (deadline <= now) return null;
      await this.#work.wait(request.queue, Math.max(1, wait), request.signal);
    }
  }

  async heartbeat(lease: LeaseRef, leaseSeconds: number): Promise<{ cancelRequested: boolean }> {
    const entry = this.#held(lease);
    // The lease alone changes: the record's lastSeq may stay behind (see Entry).
    entry.run = heartbeatRun(entry.stored, lease, Math.round(leaseSeconds * 1000), Date.now());
    return { cancelRequested: entry.stored.cancelRequested };
  }

  async append(lease: LeaseRef, type: string, data: Record<string, JsonValue>): Promise<RunEvent> {
    const entry = this.#holder(lease);
    this.#addEvent(entry, type, data, Date.now());
    return entry.events[entry.events.length - 1] as RunEvent;
  }

  async commitStep(lease: LeaseRef, key: string, value: string): Promise<string> {
    const entry = this.#holder(lease);
    const existing = entry.steps.get(key);
    if (existing !== undefined) return existing;
    entry.steps.set(key, value);
    this.#addEvent(entry, RunEventType.STEP_COMPLETED, { key }, Date.now());
    return value;
  }

  async commitStartedStep(
    lease: LeaseRef,
    key: string,
    value: string,
    startedAt: number,
  ): Promise<string> {
    const entry = this.#holder(lease);
    const existing = entry.steps.get(key);
    const now = Date.now();
    this.#addEvent(entry, RunEventType.STEP_STARTED, { key }, Math.min(startedAt, now));
    if (existing !== undefined) return existing;
    entry.steps.set(key, value);
    this.#addEvent(entry, RunEventType.STEP_COMPLETED, { key }, now);
    return value;
  }

  async checkpoint(lease: LeaseRef, state: string): Promise<void> {
    const entry = this.#holder(lease);
    entry.checkpoint = state;
    this.#addEvent(entry, RunEventType.CHECKPOINT, { bytes: Buffer.byteLength(state) }, Date.now());
  }

  async pause(lease: LeaseRef, pause: RunPause): Promise<RunRecord> {
    const entry = this.#held(lease);
    this.#apply(entry, pauseRun(entry.run, lease, pause, Date.now()));
    return entry.run;
  }

  async finish(lease: LeaseRef, outcome: RunOutcome): Promise<RunRecord> {
    const entry = this.#held(lease);
    this.#apply(entry, finishRun(entry.run, lease, outcome, Date.now()));
    return entry.run;
  }

  async retry(lease: LeaseRef, delaySeconds: number, error: RunError): Promise<RunRecord> {
    const entry = this.#held(lease);
    const delayMs = Math.round(delaySeconds * 1000);
    this.#apply(entry, retryRun(entry.run, lease, delayMs, error, Date.now()));
    return entry.run;
  }

  async release(lease: LeaseRef): Promise<RunRecord> {
    const entry = this.#held(lease);
    this.#apply(entry, releaseRun(entry.run, lease, Date.now()));
    return entry.run;
  }

  async cancel(runId: string, reason: string | null): Promise<RunRecord> {
    const entry = this.#entry(runId);
    this.#apply(entry, cancelRun(entry.run, reason, Date.now()));
    return entry.run;
  }

  async resume(runId: string, key: string | null, value: string): Promise<RunRecord> {
    const entry = this.#entry(runId);
    const answered = resumeKey(entry.run, key);
    const t = resumeRun(entry.run, answered, Date.now());
    entry.inputs.set(answered, value);
    this.#apply(entry, t);
    return entry.run;
  }

  async finishPending(
    runId: string,
    outcome: PendingOutcome,
  ): Promise<{ run: RunRecord; answers: ReadonlyMap<string, string> }> {
    const entry = this.#entry(runId);
    const answers: ReadonlyMap<string, string> = new Map(entry.inputs);
    const run = entry.run;
    const t = finishPendingRun(run, () => outcome(answers, run), Date.now());
    if (t.events.length > 0) this.#apply(entry, t);
    return { run: entry.run, answers };
  }

  async redrive(runId: string): Promise<RunRecord> {
    const entry = this.#entry(runId);
    this.#apply(entry, redriveRun(entry.run, Date.now()));
    return entry.run;
  }

  async prune(queue: string, finishedBeforeAt: number): Promise<number> {
    let count = 0;
    for (const [id, entry] of this.#runs) {
      const r = entry.stored;
      if (
        r.queue !== queue ||
        !isFinalStatus(r.status) ||
        (r.finishedAt ?? Infinity) >= finishedBeforeAt
      )
        continue;
      this.#runs.delete(id);
      this.#live.get(r.queue)?.delete(entry);
      if (r.idempotencyKey !== null) this.#byKey.delete(`${r.queue}\u0000${r.idempotencyKey}`);
      this.#events.wake(id);
      this.#statuses.wake(id);
      count += 1;
    }
    return count;
  }

  async readEvents(runId: string, afterSeq: number, limit: number): Promise<RunEvent[]> {
    const entry = this.#runs.get(runId);
    if (entry === undefined) return [];
    // seq n sits at index n - 1: history is append-only and gap-free.
    return entry.events.slice(Math.max(0, afterSeq), Math.max(0, afterSeq) + limit);
  }

  async waitForEvents(
    runId: string,
    afterSeq: number,
    options: { signal?: AbortSignal; timeoutSeconds?: number },
  ): Promise<void> {
    const entry = this.#runs.get(runId);
    if (entry === undefined || entry.events.length > afterSeq || this.#closed) return;
    const timeoutMs = (options.timeoutSeconds ?? Infinity) * 1000;
    await this.#events.wait(runId, timeoutMs, options.signal);
  }

  async waitForStatusChange(
    runId: string,
    status: RunStatus,
    options: { signal?: AbortSignal; timeoutSeconds?: number; until?: readonly RunStatus[] },
  ): Promise<void> {
    const deadline = Date.now() + (options.timeoutSeconds ?? Infinity) * 1000;
    for (;;) {
      const now = this.#runs.get(runId)?.stored.status;
      if (now === undefined || this.#closed || options.signal?.aborted === true) return;
      if (endsStatusWait(now, status, options.until)) return;
      const left = deadline - Date.now();
      if (left <= 0) return;
      await this.#statuses.wait(runId, left, options.signal);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#events.wakeAll();
    this.#work.wakeAll();
    this.#statuses.wakeAll();
  }

  #entry(runId: string): Entry {
    const entry = this.#runs.get(runId);
    if (entry === undefined) throw runNotFound(runId);
    return entry;
  }

  #held(lease: LeaseRef): Entry {
    const entry = this.#runs.get(lease.runId);
    if (entry === undefined) throw leaseLost(lease, null);
    return entry;
  }

  /** The entry of the lease holder's run, for a write that only adds events; LEASE_LOST when stale. */
  #holder(lease: LeaseRef): Entry {
    const entry = this.#held(lease);
    checkFence(entry.stored, lease);
    return entry;
  }

  /** Appends one event of the holder's attempt; the record stays as it is (see Entry). */
  #addEvent(entry: Entry, type: string, data: Record<string, JsonValue>, at: number): void {
    const { id, attempt } = entry.stored;
    entry.events.push({ runId: id, seq: entry.events.length + 1, type, at, attempt, data });
    this.#events.wake(id);
  }

  /** Keeps `entry` in its queue's live set while it is pending or running. */
  #index(entry: Entry): void {
    const { queue, status } = entry.stored;
    let live = this.#live.get(queue);
    if (status === RunStatus.PENDING || status === RunStatus.RUNNING) {
      if (live === undefined) this.#live.set(queue, (live = new Set()));
      live.add(entry);
    } else if (live !== undefined) {
      live.delete(entry);
      if (live.size === 0) this.#live.delete(queue);
    }
  }

  /** Writes a transition made from `entry.run`: its record, then its events (seq in order). */
  #apply(entry: Entry, t: Transition): void {
    const before = entry.stored.status;
    const { id, status, queue } = t.run;
    for (const e of t.events) entry.events.push(runEvent(id, e));
    entry.run = t.run;
    if (t.events.length > 0) this.#events.wake(id);
    if (status !== before) {
      this.#statuses.wake(id);
      this.#index(entry);
    }
    if (status === RunStatus.PENDING) this.#work.wake(queue);
  }
}

/** Claim order: lower priority first, then the one due first, then the older. */
export function claimOrder(a: RunRecord, b: RunRecord): number {
  const due = (r: RunRecord): number =>
    r.status === RunStatus.RUNNING && r.lease !== null ? r.lease.expiresAt : r.availableAt;
  return (
    a.priority - b.priority ||
    due(a) - due(b) ||
    a.createdAt - b.createdAt ||
    (a.id < b.id ? -1 : 1)
  );
}
