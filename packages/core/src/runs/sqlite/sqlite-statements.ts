import { ErrorCode, NervaError } from "../../errors.js";
import { LIMIT_PARAM, type SqliteDatabase } from "../../internal/sqlite.js";
import type { runTables } from "./sqlite-schema.js";
import { RunStatus, type RunRecord } from "../types.js";

/** Rows as the statements below return them. */
export interface RunRow {
  doc: string;
  last_seq: number;
}
/**
 * What a fenced write that only adds events and values needs of its run (no JSON), as the
 * `holder` statement returns it: a raw row, no object built per write.
 */
export type HolderRow = [
  status: string,
  leaseWorkerId: string | null,
  leaseFence: number | null,
  attempt: number,
  lastSeq: number,
];
export interface EventRow {
  seq: number;
  type: string;
  at: number;
  attempt: number;
  data: string;
}

/**
 * The record a row holds: its JSON, with `lastSeq` from the run's events (the JSON's lags behind
 * events appended since the record was last written).
 */
export function toRecord(row: RunRow): RunRecord {
  const run = JSON.parse(row.doc) as RunRecord & { lastSeq: number };
  run.lastSeq = row.last_seq;
  return run;
}

/** Where a run can be claimed: its due time while pending or running, else nothing. */
export function claimableAt(run: RunRecord): number | null {
  if (run.status === RunStatus.PENDING) return run.availableAt;
  if (run.status === RunStatus.RUNNING && run.lease !== null) return run.lease.expiresAt;
  return null;
}

/** A SQLite lock or I/O failure as UNAVAILABLE (callers retry it); anything else as it is. */
export function unavailable(err: unknown): unknown {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === "string" && /^SQLITE_(BUSY|LOCKED|IOERR|CANTOPEN|PROTOCOL)/.test(code)) {
    return new NervaError(
      ErrorCode.UNAVAILABLE,
      `The run store's SQLite file is unavailable (${code}): another process holds its write lock, or the disk failed. Retry later.`,
      { cause: err, details: { retryAfterSeconds: 1, sqliteCode: code } },
    );
  }
  return err;
}

/**
 * The columns of a run row a record is read from: its JSON and its last event's seq, looked up in
 * the events' primary key (the runs row is not rewritten for each event).
 */
export function recordColumns(t: ReturnType<typeof runTables>): string {
  return `doc, (SELECT MAX(seq) FROM ${t.events} e WHERE e.run_id = ${t.runs}.id) AS last_seq`;
}

/** Every statement the store runs, prepared once. */
export function prepareStatements(db: SqliteDatabase, t: ReturnType<typeof runTables>) {
  const record = recordColumns(t);
  return {
    get: db.prepare(`SELECT ${record} FROM ${t.runs} WHERE id = ?`),
    byKey: db.prepare(`SELECT ${record} FROM ${t.runs} WHERE queue = ? AND idempotency_key = ?`),
    holder: db
      .prepare(
        `SELECT status, lease_worker_id, lease_fence, attempt,
           (SELECT MAX(seq) FROM ${t.events} e WHERE e.run_id = ${t.runs}.id) AS last_seq
         FROM ${t.runs} WHERE id = ?`,
      )
      .raw(true),
    insert: db.prepare(
      `INSERT INTO ${t.runs} (id, queue, status, priority, claimable_at, idempotency_key, user_id, created_at, finished_at, doc, lease_worker_id, lease_fence, attempt)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    update: db.prepare(
      `UPDATE ${t.runs} SET status = ?, priority = ?, claimable_at = ?, finished_at = ?, doc = ?, lease_worker_id = ?, lease_fence = ?, attempt = ? WHERE id = ?`,
    ),
    next: db.prepare(
      `SELECT ${record} FROM ${t.runs} WHERE queue = ? AND claimable_at IS NOT NULL AND claimable_at <= ?
       ORDER BY priority, claimable_at, created_at, id LIMIT 1`,
    ),
    nextDue: db.prepare(
      `SELECT MIN(claimable_at) AS due FROM ${t.runs} WHERE queue = ? AND claimable_at IS NOT NULL`,
    ),
    status: db.prepare(`SELECT status FROM ${t.runs} WHERE id = ?`).raw(true),
    lastSeq: db.prepare(
      `SELECT (SELECT MAX(seq) FROM ${t.events} e WHERE e.run_id = ${t.runs}.id) AS last_seq
       FROM ${t.runs} WHERE id = ?`,
    ),
    event: db.prepare(
      `INSERT INTO ${t.events} (run_id, seq, type, at, attempt, data) VALUES (?, ?, ?, ?, ?, ?)`,
    ),
    twoEvents: db.prepare(
      `INSERT INTO ${t.events} (run_id, seq, type, at, attempt, data)
       VALUES (?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?)`,
    ),
    events: db.prepare(
      `SELECT seq, type, at, attempt, data FROM ${t.events} WHERE run_id = ? AND seq > ? ORDER BY seq ${LIMIT_PARAM}`,
    ),
    value: db.prepare(`SELECT value FROM ${t.values} WHERE run_id = ? AND kind = ? AND key = ?`),
    putStep: db.prepare(
      `INSERT INTO ${t.values} (run_id, kind, key, value) VALUES (?, 'step', ?, ?)
       ON CONFLICT (run_id, kind, key) DO NOTHING`,
    ),
    values: db.prepare(`SELECT kind, key, value FROM ${t.values} WHERE run_id = ?`),
    putValue: db.prepare(
      `INSERT INTO ${t.values} (run_id, kind, key, value) VALUES (?, ?, ?, ?)
       ON CONFLICT (run_id, kind, key) DO UPDATE SET value = excluded.value`,
    ),
    prunable: db.prepare(
      `SELECT id FROM ${t.runs} WHERE queue = ? AND finished_at IS NOT NULL AND finished_at < ?
       AND status IN ('succeeded', 'failed', 'timed_out', 'cancelled') LIMIT 500`,
    ),
    deleteRun: db.prepare(`DELETE FROM ${t.runs} WHERE id = ?`),
    deleteEvents: db.prepare(`DELETE FROM ${t.events} WHERE run_id = ?`),
    deleteValues: db.prepare(`DELETE FROM ${t.values} WHERE run_id = ?`),
    begin: db.prepare("BEGIN IMMEDIATE"),
    commit: db.prepare("COMMIT"),
    rollback: db.prepare("ROLLBACK"),
  };
}
export type Statements = ReturnType<typeof prepareStatements>;
