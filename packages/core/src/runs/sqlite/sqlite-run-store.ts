import { z } from "zod";
import { ErrorCode, parseOrThrow } from "../../errors.js";
import {
  LIMIT_PARAM,
  openDatabase,
  setUpDatabase,
  TABLE_PREFIX,
  type SqliteDatabase,
} from "../../internal/sqlite.js";
import type { JsonValue } from "../../types/agent.js";
import { decodeCursor, encodeCursor } from "../list-cursor.js";
import { RunRows } from "./sqlite-rows.js";
import { ensureRunSchema, runTables } from "./sqlite-schema.js";
import {
  prepareStatements,
  recordColumns,
  toRecord,
  type EventRow,
  type RunRow,
  type Statements,
} from "./sqlite-statements.js";
import { endsStatusWait } from "../wakeups.js";
import { SqliteWaiters } from "./sqlite-waiters.js";
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
  claimRun,
  createRun,
  finishPendingRun,
  finishRun,
  heartbeatRun,
  pauseRun,
  redriveRun,
  releaseRun,
  resumeKey,
  resumeRun,
  retryRun,
  runEvent,
  runNotFound,
  type EventDraft,
  type Transition,
} from "../transitions.js";
import {
  RunEventType,
  RunStatus,
  type RunError,
  type RunEvent,
  type RunPage,
  type RunPause,
  type RunRecord,
} from "../types.js";

export const SqliteRunStoreOptionsSchema = z
  .object({
    /** The SQLite file (created if missing); `":memory:"` for a private, volatile one. */
    path: z.string().min(1),
    tablePrefix: z.string().regex(TABLE_PREFIX, "must be a SQL identifier").default("nerva_"),
    /** How long a write waits for another process's lock before UNAVAILABLE. */
    busyTimeoutSeconds: z.number().min(0).max(600).finite().default(5),
    /** How often a waiting tail or claim looks for other processes' commits. */
    pollSeconds: z.number().min(0.001).max(1).default(0.02),
  })
  .strict();
/** Options of {@link SqliteRunStore}. */
export type SqliteRunStoreOptions = z.input<typeof SqliteRunStoreOptionsSchema>;

/**
 * A {@link RunStore} in one SQLite file (better-sqlite3 12, WAL): one `BEGIN IMMEDIATE`
 * transaction per transition, so any number of worker and producer processes on one machine can
 * share the file. Writes that only add events and step values (a step, an event, a checkpoint)
 * check the fence on the record's columns and leave its JSON as it is. Waiting claims and event tails see other processes' commits within `pollSeconds`
 * (they watch SQLite's `data_version`, and only while someone waits); this process's own writes
 * wake them at once.
 *
 * @example
 * const queue = new RunQueue({ store: new SqliteRunStore({ path: "runs.db" }), name: "default" });
 */
export class SqliteRunStore implements RunStore {
  readonly #db: SqliteDatabase;
  readonly #s: Statements;
  readonly #rows: RunRows;
  /** Waiting claims and event tails, and what wakes them. */
  readonly #waiters: SqliteWaiters;
  #closed = false;

  constructor(options: SqliteRunStoreOptions) {
    const o = parseOrThrow(
      SqliteRunStoreOptionsSchema,
      options,
      ErrorCode.INVALID_OPTIONS,
      "options",
      'Pass { path: "runs.db", tablePrefix?, busyTimeoutSeconds?, pollSeconds? }.',
    );
    const db = openDatabase(
      o.path,
      "options.path",
      "SqliteRunStore",
      Math.round(o.busyTimeoutSeconds * 1000),
    );
    this.#db = db;
    const t = runTables(o.tablePrefix);
    [this.#s, this.#listSql] = setUpDatabase(db, o.path, "options.path", () => {
      // Every run transition is a small write transaction. SQLite's default checkpoints the WAL
      // into the main file every 1,000 pages (~4 MB), which at run rates is every few hundred
      // commits and costs the committing writer ~10 µs per commit on average. 8,000 pages (a WAL
      // of up to ~32 MB before it is folded back) makes that cost rare; readers are unaffected.
      db.pragma("wal_autocheckpoint = 8000");
      ensureRunSchema(db, t, o.path);
      return [
        prepareStatements(db, t),
        `SELECT ${recordColumns(t)} FROM ${t.runs} WHERE queue = ?`,
      ] as const;
    });
    this.#rows = new RunRows(db, this.#s);
    this.#waiters = new SqliteWaiters(
      Math.round(o.pollSeconds * 1000),
      () => db.pragma("data_version", { simple: true }) as number,
      (runId) => this.#rows.read(runId)?.cancelRequested === true,
    );
  }

  readonly #listSql: string;
  /** The list statements prepared so far, by SQL (a few filter combinations). */
  readonly #lists = new Map<string, ReturnType<SqliteDatabase["prepare"]>>();

  async create(init: NewRun): Promise<{ run: RunRecord; created: boolean }> {
    const result = this.#rows.atomic(() => {
      if (init.idempotencyKey !== null) {
        const row = this.#s.byKey.get(init.queue, init.idempotencyKey) as RunRow | undefined;
        if (row !== undefined) return { run: toRecord(row), created: false };
      }
      const t = createRun(init, Date.now());
      this.#rows.insert(t);
      return { run: t.run as RunRecord, created: true };
    });
    if (result.created) this.#waiters.wake(result.run);
    return result;
  }

  async get(runId: string): Promise<RunRecord | null> {
    return this.#rows.read(runId);
  }

  async list(query: RunListQuery): Promise<RunPage> {
    const after = decodeCursor(query.cursor ?? null);
    let sql = this.#listSql;
    const params: unknown[] = [query.queue];
    if (query.status !== undefined) {
      sql += " AND status = ?";
      params.push(query.status);
      // A pending run is always claimable at some time: the live index holds it.
      if (query.status === RunStatus.PENDING) sql += " AND claimable_at IS NOT NULL";
    }
    if (query.userId !== undefined) {
      sql += " AND user_id = ?";
      params.push(query.userId);
    }
    if (query.handler !== undefined) {
      sql +=
        " AND EXISTS (SELECT 1 FROM json_each(json_extract(doc, '$.handlers')) WHERE value = ?)";
      params.push(query.handler);
    }
    if (after !== null) {
      sql += " AND (created_at < ? OR (created_at = ? AND id < ?))";
      params.push(after.createdAt, after.createdAt, after.id);
    }
    sql += ` ORDER BY created_at DESC, id DESC ${LIMIT_PARAM}`;
    params.push(query.limit + 1);
    let statement = this.#lists.get(sql);
    if (statement === undefined) {
      statement = this.#db.prepare(sql);
      this.#lists.set(sql, statement);
    }
    const rows = statement.all(...params) as RunRow[];
    const runs = rows.slice(0, query.limit).map(toRecord);
    const last = runs[runs.length - 1];
    return {
      runs,
      nextCursor: rows.length > query.limit && last !== undefined ? encodeCursor(last) : null,
    };
  }

  async claim(request: ClaimRequest): Promise<ClaimedRun | null> {
    if (this.#closed) throw closedStore();
    const deadline = Date.now() + request.waitSeconds * 1000;
    const leaseMs = Math.round(request.leaseSeconds * 1000);
    const take = (now: number): ClaimedRun | null | "again" => {
      const row = this.#s.next.get(request.queue, now) as RunRow | undefined;
      if (row === undefined) return null;
      const t = claimRun(toRecord(row), request.workerId, leaseMs, now);
      this.#rows.save(t);
      if (!t.claimed) return "again";
      const steps = new Map<string, string>();
      const inputs = new Map<string, string>();
      let checkpoint: string | null = null;
      for (const v of this.#s.values.all(t.run.id) as {
        kind: string;
        key: string;
        value: string;
      }[]) {
        if (v.kind === "step") steps.set(v.key, v.value);
        else if (v.kind === "input") inputs.set(v.key, v.value);
        else if (v.kind === "checkpoint") checkpoint = v.value;
      }
      return {
        run: t.run,
        lease: { runId: t.run.id, workerId: request.workerId, fence: t.run.fence },
        steps,
        inputs,
        checkpoint,
      };
    };
    for (;;) {
      if (this.#closed || request.signal?.aborted === true) return null;
      const now = Date.now();
      const got = this.#rows.atomic(() => take(now));
      if (got === "again") continue;
      if (got !== null) {
        this.#waiters.wake(got.run);
        return got;
      }
      if (now >= deadline) return null;
      const due = (this.#s.nextDue.get(request.queue) as { due: number | null }).due;
      const until = Math.min(deadline, due === null ? Infinity : Math.max(due, now + 1));
      await this.#waiters.waitFor(
        this.#waiters.work,
        `q:${request.queue}`,
        until - now,
        request.signal,
      );
    }
  }

  async heartbeat(lease: LeaseRef, leaseSeconds: number): Promise<{ cancelRequested: boolean }> {
    const leaseMs = Math.round(leaseSeconds * 1000);
    return this.#rows.atomic(() => {
      const next = heartbeatRun(this.#rows.held(lease), lease, leaseMs, Date.now());
      this.#rows.save({ run: next, events: [] });
      return { cancelRequested: next.cancelRequested };
    });
  }

  async append(lease: LeaseRef, type: string, data: Record<string, JsonValue>): Promise<RunEvent> {
    const [e] = this.#rows.atomic(() =>
      this.#rows.addEvents(lease, this.#rows.holder(lease), [[type, data]]),
    );
    this.#waiters.events.wake(lease.runId);
    return runEvent(lease.runId, e as EventDraft);
  }

  async commitStep(lease: LeaseRef, key: string, value: string): Promise<string> {
    return this.#commitStep(lease, key, value, null);
  }

  async commitStartedStep(
    lease: LeaseRef,
    key: string,
    value: string,
    startedAt: number,
  ): Promise<string> {
    return this.#commitStep(lease, key, value, startedAt);
  }

  async checkpoint(lease: LeaseRef, state: string): Promise<void> {
    this.#rows.atomic(() => {
      const holder = this.#rows.holder(lease);
      this.#s.putValue.run(lease.runId, "checkpoint", "", state);
      this.#rows.addEvents(lease, holder, [
        [RunEventType.CHECKPOINT, { bytes: Buffer.byteLength(state) }],
      ]);
    });
    this.#waiters.events.wake(lease.runId);
  }

  async pause(lease: LeaseRef, pause: RunPause): Promise<RunRecord> {
    return this.#leased(lease, (run, now) => pauseRun(run, lease, pause, now));
  }

  async finish(lease: LeaseRef, outcome: RunOutcome): Promise<RunRecord> {
    return this.#leased(lease, (run, now) => finishRun(run, lease, outcome, now));
  }

  async retry(lease: LeaseRef, delaySeconds: number, error: RunError): Promise<RunRecord> {
    const delayMs = Math.round(delaySeconds * 1000);
    return this.#leased(lease, (run, now) => retryRun(run, lease, delayMs, error, now));
  }

  async release(lease: LeaseRef): Promise<RunRecord> {
    return this.#leased(lease, (run, now) => releaseRun(run, lease, now));
  }

  async cancel(runId: string, reason: string | null): Promise<RunRecord> {
    const run = await this.#change(runId, (run, now) => cancelRun(run, reason, now));
    if (run.cancelRequested) this.#waiters.cancels.notify(runId);
    return run;
  }

  async resume(runId: string, key: string | null, value: string): Promise<RunRecord> {
    return this.#change(runId, (run, now) => {
      const answered = resumeKey(run, key);
      this.#s.putValue.run(runId, "input", answered, value);
      return resumeRun(run, answered, now);
    });
  }

  async finishPending(
    runId: string,
    outcome: PendingOutcome,
  ): Promise<{ run: RunRecord; answers: ReadonlyMap<string, string> }> {
    const answers = new Map<string, string>();
    const run = await this.#change(runId, (run, now) => {
      answers.clear();
      for (const v of this.#s.values.all(runId) as { kind: string; key: string; value: string }[]) {
        if (v.kind === "input") answers.set(v.key, v.value);
      }
      return finishPendingRun(run, () => outcome(answers, run), now);
    });
    return { run, answers };
  }

  async redrive(runId: string): Promise<RunRecord> {
    return this.#change(runId, (run, now) => redriveRun(run, now));
  }

  async prune(queue: string, finishedBeforeAt: number): Promise<number> {
    let total = 0;
    for (;;) {
      const ids = this.#rows.atomic(() => {
        const rows = this.#s.prunable.all(queue, finishedBeforeAt) as { id: string }[];
        for (const { id } of rows) {
          this.#s.deleteRun.run(id);
          this.#s.deleteEvents.run(id);
          this.#s.deleteValues.run(id);
        }
        return rows.map((r) => r.id);
      });
      for (const id of ids) {
        this.#waiters.events.wake(id);
        this.#waiters.statuses.wake(id);
      }
      total += ids.length;
      if (ids.length < 500) return total;
    }
  }

  async readEvents(runId: string, afterSeq: number, limit: number): Promise<RunEvent[]> {
    const rows = this.#s.events.all(runId, afterSeq, limit) as EventRow[];
    return rows.map((r) => ({
      runId,
      seq: r.seq,
      type: r.type,
      at: r.at,
      attempt: r.attempt,
      data: JSON.parse(r.data) as Record<string, JsonValue>,
    }));
  }

  async waitForEvents(
    runId: string,
    afterSeq: number,
    options: { signal?: AbortSignal; timeoutSeconds?: number },
  ): Promise<void> {
    const deadline = Date.now() + (options.timeoutSeconds ?? Infinity) * 1000;
    for (;;) {
      if (this.#closed || options.signal?.aborted === true) return;
      const row = this.#s.lastSeq.get(runId) as { last_seq: number } | undefined;
      if (row === undefined || row.last_seq > afterSeq) return;
      const left = deadline - Date.now();
      if (left <= 0) return;
      await this.#waiters.waitFor(this.#waiters.events, runId, left, options.signal);
    }
  }

  async waitForStatusChange(
    runId: string,
    status: RunStatus,
    options: { signal?: AbortSignal; timeoutSeconds?: number; until?: readonly RunStatus[] },
  ): Promise<void> {
    const deadline = Date.now() + (options.timeoutSeconds ?? Infinity) * 1000;
    for (;;) {
      if (this.#closed || options.signal?.aborted === true) return;
      const row = this.#s.status.get(runId) as [string] | undefined;
      if (row === undefined || endsStatusWait(row[0], status, options.until)) return;
      const left = deadline - Date.now();
      if (left <= 0) return;
      await this.#waiters.waitFor(this.#waiters.statuses, runId, left, options.signal);
    }
  }

  /**
   * Calls `listener` as soon as a cancel of `runId` is recorded: at once through this store, and
   * within `pollSeconds` through any other connection to the file (another process included).
   */
  watchCancel(runId: string, listener: () => void): () => void {
    return this.#waiters.watchCancel(runId, listener);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#waiters.close();
    this.#db.close();
  }

  // ---- internals -------------------------------------------------------------------------

  #commitStep(lease: LeaseRef, key: string, value: string, startedAt: number | null): string {
    const [committed, wrote] = this.#rows.atomic(() =>
      this.#rows.commitStep(lease, key, value, startedAt),
    );
    if (wrote) this.#waiters.events.wake(lease.runId);
    return committed;
  }

  #leased(lease: LeaseRef, apply: (run: RunRecord, now: number) => Transition): Promise<RunRecord> {
    const t = this.#rows.atomic(() => {
      const t = apply(this.#rows.held(lease), Date.now());
      this.#rows.save(t);
      return t;
    });
    this.#waiters.wake(t.run);
    return Promise.resolve(t.run);
  }

  #change(runId: string, apply: (run: RunRecord, now: number) => Transition): Promise<RunRecord> {
    const t = this.#rows.atomic(() => {
      const run = this.#rows.read(runId);
      if (run === null) throw runNotFound(runId);
      const t = apply(run, Date.now());
      if (t.events.length > 0) this.#rows.save(t);
      return t;
    });
    this.#waiters.wake(t.run);
    return Promise.resolve(t.run);
  }
}
