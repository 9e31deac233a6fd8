import type { SqliteDatabase } from "../../internal/sqlite.js";
import type { JsonValue } from "../../types/agent.js";
import {
  claimableAt,
  toRecord,
  unavailable,
  type HolderRow,
  type RunRow,
  type Statements,
} from "./sqlite-statements.js";
import type { LeaseRef } from "../store.js";
import { leaseLost, type EventDraft, type Transition } from "../transitions.js";
import { RunEventType, RunStatus, type RunRecord } from "../types.js";

/** An event to append: its type, data and, when not now, its time (epoch ms). */
export type NewEvent = readonly [type: string, data: Record<string, JsonValue>, at?: number];

/**
 * How SqliteRunStore reads and writes the rows of its runs, inside transactions it opens with
 * {@link atomic}. A transition of the record rewrites its row (JSON and columns); a write that
 * only adds events or step values (a step, an event, a checkpoint) checks the fence on the
 * row's columns and leaves the row alone: the run's last event is read from its events.
 */
export class RunRows {
  readonly #db: SqliteDatabase;
  readonly #s: Statements;

  constructor(db: SqliteDatabase, statements: Statements) {
    this.#db = db;
    this.#s = statements;
  }

  /** Runs `fn` in one `BEGIN IMMEDIATE` transaction; lock and I/O failures are UNAVAILABLE. */
  atomic<R>(fn: () => R): R {
    try {
      this.#s.begin.run();
    } catch (err) {
      throw unavailable(err);
    }
    try {
      const result = fn();
      this.#s.commit.run();
      return result;
    } catch (err) {
      if (this.#db.inTransaction) this.#s.rollback.run();
      throw unavailable(err);
    }
  }

  read(runId: string): RunRecord | null {
    const row = this.#s.get.get(runId) as RunRow | undefined;
    return row === undefined ? null : toRecord(row);
  }

  /** The record of the lease holder's run; LEASE_LOST when the run is gone. */
  held(lease: LeaseRef): RunRecord {
    const run = this.read(lease.runId);
    if (run === null) throw leaseLost(lease, null);
    return run;
  }

  /** The columns of the lease holder's run (no JSON parsed); LEASE_LOST when `lease` is stale. */
  holder(lease: LeaseRef): HolderRow {
    const row = this.#s.holder.get(lease.runId) as HolderRow | undefined;
    if (
      row === undefined ||
      row[0] !== RunStatus.RUNNING ||
      row[2] !== lease.fence ||
      row[1] !== lease.workerId
    ) {
      throw leaseLost(lease, this.read(lease.runId));
    }
    return row;
  }

  /** Appends `events` after the holder's last one (the run row is not touched). */
  addEvents(lease: LeaseRef, holder: HolderRow, events: readonly NewEvent[]): EventDraft[] {
    const now = Date.now();
    const attempt = holder[3];
    let seq = holder[4];
    const drafts = events.map(([type, data, at]) => ({
      seq: ++seq,
      type,
      at: at ?? now,
      attempt,
      data,
    }));
    this.writeEvents(lease.runId, drafts);
    return drafts;
  }

  /**
   * Commits step `key` for the holder, with its `step.started` first when `startedAt` is given;
   * a key committed before keeps its first value. Returns the committed value and whether any
   * event was written.
   */
  commitStep(
    lease: LeaseRef,
    key: string,
    value: string,
    startedAt: number | null,
  ): [committed: string, wrote: boolean] {
    const holder = this.holder(lease);
    const fresh = this.#s.putStep.run(lease.runId, key, value).changes === 1;
    const events: NewEvent[] = [];
    // Both events carry the same data: one object, written as JSON once (writeEvents).
    const data = { key };
    if (startedAt !== null) {
      events.push([RunEventType.STEP_STARTED, data, Math.min(startedAt, Date.now())]);
    }
    if (fresh) events.push([RunEventType.STEP_COMPLETED, data]);
    if (events.length > 0) this.addEvents(lease, holder, events);
    if (fresh) return [value, true];
    const existing = this.#s.value.get(lease.runId, "step", key) as { value: string };
    return [existing.value, events.length > 0];
  }

  /** Writes a new run's row and events. */
  insert(t: Transition): void {
    const r = t.run;
    this.#s.insert.run(
      r.id,
      r.queue,
      r.status,
      r.priority,
      claimableAt(r),
      r.idempotencyKey,
      r.userId,
      r.createdAt,
      r.finishedAt,
      JSON.stringify(r),
      r.lease?.workerId ?? null,
      r.lease?.fence ?? null,
      r.attempt,
    );
    this.writeEvents(r.id, t.events);
  }

  /** Rewrites a run's row after a transition (JSON and columns) and appends its events. */
  save(t: { run: RunRecord; events: Transition["events"] }): void {
    const r = t.run;
    this.#s.update.run(
      r.status,
      r.priority,
      claimableAt(r),
      r.finishedAt,
      JSON.stringify(r),
      r.lease?.workerId ?? null,
      r.lease?.fence ?? null,
      r.attempt,
      r.id,
    );
    this.writeEvents(r.id, t.events);
  }

  writeEvents(runId: string, events: readonly EventDraft[]): void {
    const [a, b] = events;
    if (events.length === 2 && a !== undefined && b !== undefined) {
      // A step's start and commit: one statement.
      const aData = JSON.stringify(a.data);
      const bData = b.data === a.data ? aData : JSON.stringify(b.data);
      // prettier-ignore
      this.#s.twoEvents.run(
        runId, a.seq, a.type, a.at, a.attempt, aData,
        runId, b.seq, b.type, b.at, b.attempt, bData,
      );
      return;
    }
    for (const e of events) {
      this.#s.event.run(runId, e.seq, e.type, e.at, e.attempt, JSON.stringify(e.data));
    }
  }
}
