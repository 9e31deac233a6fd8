import type { JsonValue } from "../types/agent.js";
import { decodeCursor, encodeCursor, matchesQuery, newerFirst } from "./list-cursor.js";
import type {
  ClaimRequest,
  ClaimedRun,
  LeaseRef,
  NewRun,
  RunListQuery,
  RunOutcome,
  RunStore,
} from "./store.js";
import {
  appendEvent,
  cancelRun,
  closedStore,
  checkFence,
  claimRun,
  createRun,
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
  startedStepEvents,
  type Transition,
} from "./transitions.js";
import {
  RunEventType,
  RunStatus,
  isFinalStatus,
  type RunError,
  type RunEvent,
  type RunPage,
  type RunPause,
  type RunRecord,
} from "./types.js";
import { Wakeups } from "./wakeups.js";

interface Entry {
  run: RunRecord;
  readonly events: RunEvent[];
  readonly steps: Map<string, string>;
  readonly inputs: Map<string, string>;
  checkpoint: string | null;
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
  #closed = false;

  async create(init: NewRun): Promise<{ run: RunRecord; created: boolean }> {
    if (init.idempotencyKey !== null) {
      const existing = this.#byKey.get(`${init.queue}\u0000${init.idempotencyKey}`);
      const entry = existing === undefined ? undefined : this.#runs.get(existing);
      if (entry !== undefined) return { run: entry.run, created: false };
    }
    const t = createRun(init, Date.now());
    const entry: Entry = {
      run: t.run,
      events: [],
      steps: new Map(),
      inputs: new Map(),
      checkpoint: null,
    };
    this.#runs.set(init.id, entry);
    if (init.idempotencyKey !== null) {
      this.#byKey.set(`${init.queue}\u0000${init.idempotencyKey}`, init.id);
    }
    this.#apply(entry, t);
    return { run: entry.run, created: true };
  }

  async get(runId: string): Promise<RunRecord | null> {
    return this.#runs.get(runId)?.run ?? null;
  }

  async list(query: RunListQuery): Promise<RunPage> {
    const after = decodeCursor(query.cursor ?? null);
    const runs = [...this.#runs.values()]
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
      for (const entry of this.#runs.values()) {
        const r = entry.run;
        if (r.queue !== request.queue) continue;
        if (isClaimable(r, now)) {
          if (best === null || claimOrder(r, best.run) < 0) best = entry;
        } else if (r.status === RunStatus.PENDING) {
          nextDue = Math.min(nextDue, r.availableAt);
        } else if (r.status === RunStatus.RUNNING && r.lease !== null) {
          nextDue = Math.min(nextDue, r.lease.expiresAt);
        }
      }
      if (best !== null) {
        const t = claimRun(best.run, request.workerId, Math.round(request.leaseSeconds * 1000), now);
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
    entry.run = heartbeatRun(entry.run, lease, Math.round(leaseSeconds * 1000), Date.now());
    return { cancelRequested: entry.run.cancelRequested };
  }

  async append(lease: LeaseRef, type: string, data: Record<string, JsonValue>): Promise<RunEvent> {
    const entry = this.#held(lease);
    this.#apply(entry, appendEvent(entry.run, lease, type, data, Date.now()));
    return entry.events[entry.events.length - 1] as RunEvent;
  }

  async commitStep(lease: LeaseRef, key: string, value: string): Promise<string> {
    const entry = this.#held(lease);
    checkFence(entry.run, lease);
    const existing = entry.steps.get(key);
    if (existing !== undefined) return existing;
    entry.steps.set(key, value);
    this.#apply(
      entry,
      appendEvent(entry.run, lease, RunEventType.STEP_COMPLETED, { key }, Date.now()),
    );
    return value;
  }

  async commitStartedStep(
    lease: LeaseRef,
    key: string,
    value: string,
    startedAt: number,
  ): Promise<string> {
    const entry = this.#held(lease);
    const existing = entry.steps.get(key);
    const t = startedStepEvents(
      entry.run,
      lease,
      key,
      startedAt,
      existing === undefined,
      Date.now(),
    );
    if (existing !== undefined) {
      this.#apply(entry, t);
      return existing;
    }
    entry.steps.set(key, value);
    this.#apply(entry, t);
    return value;
  }

  async checkpoint(lease: LeaseRef, state: string): Promise<void> {
    const entry = this.#held(lease);
    const t = appendEvent(
      entry.run,
      lease,
      RunEventType.CHECKPOINT,
      { bytes: Buffer.byteLength(state) },
      Date.now(),
    );
    entry.checkpoint = state;
    this.#apply(entry, t);
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

  async redrive(runId: string): Promise<RunRecord> {
    const entry = this.#entry(runId);
    this.#apply(entry, redriveRun(entry.run, Date.now()));
    return entry.run;
  }

  async prune(queue: string, finishedBeforeAt: number): Promise<number> {
    let count = 0;
    for (const [id, entry] of this.#runs) {
      const r = entry.run;
      if (r.queue !== queue || !isFinalStatus(r.status) || (r.finishedAt ?? Infinity) >= finishedBeforeAt)
        continue;
      this.#runs.delete(id);
      if (r.idempotencyKey !== null) this.#byKey.delete(`${r.queue}\u0000${r.idempotencyKey}`);
      this.#events.wake(id);
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
    if (entry === undefined || entry.run.lastSeq > afterSeq || this.#closed) return;
    const timeoutMs = (options.timeoutSeconds ?? Infinity) * 1000;
    await this.#events.wait(runId, timeoutMs, options.signal);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#events.wakeAll();
    this.#work.wakeAll();
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

  #apply(entry: Entry, t: Transition): void {
    entry.run = t.run;
    for (const e of t.events) entry.events.push(runEvent(entry.run.id, e));
    if (t.events.length > 0) this.#events.wake(entry.run.id);
    if (entry.run.status === RunStatus.PENDING) {
      this.#work.wake(entry.run.queue);
    }
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
