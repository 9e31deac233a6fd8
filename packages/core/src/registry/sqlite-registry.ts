import { z } from "zod";
import type { ExecContext } from "../context/exec-context.js";
import type { Attributes } from "../types/trace.js";
import { ErrorCode, NervaError, parseOrThrow } from "../errors.js";
import {
  openDatabase,
  openError,
  unavailableError,
  TABLE_PREFIX,
  type SqliteDatabase,
  type SqliteStatement,
} from "../internal/sqlite.js";
import {
  applyInvocation,
  byKindThenName,
  entryView,
  emptyStats,
  inSpan,
  matches,
  notFound,
  parseEntry,
  parseFilter,
  parseHealth,
  parseKey,
  parseRecord,
  RegistryOptionsSchema,
  statsView,
  visible,
  type ParsedEntryInit,
  type StatsState,
} from "./shared.js";
import type {
  DiscoverFilter,
  HealthStatus,
  InvocationRecord,
  InvocationStats,
  Registry,
  RegistryEntry,
  RegistryEntryInit,
  RegistryKind,
} from "./types.js";

export const SqliteRegistryOptionsSchema = RegistryOptionsSchema.extend({
  path: z.string().min(1),
  tablePrefix: z.string().regex(TABLE_PREFIX, "must be a SQL identifier").default("nerva_"),
  /** How long opening and each write wait for another process's lock before UNAVAILABLE. */
  busyTimeoutSeconds: z.number().min(0).max(600).finite().default(5),
}).strict();
/** Options of {@link SqliteRegistry}. */
export type SqliteRegistryOptions = z.input<typeof SqliteRegistryOptionsSchema>;

interface Row {
  kind: string;
  name: string;
  init: string;
  registered_at: number;
  updated_at: number;
  count: number;
  failures: number;
  consecutive_failures: number;
  total_latency_ms: number;
  min_latency_ms: number | null;
  max_latency_ms: number | null;
  last_latency_ms: number | null;
  last_invoked_at: number | null;
  last_error: string | null;
  health: string;
  health_detail: string | null;
  health_auto: number;
}

function stateOf(row: Row): StatsState {
  return {
    count: row.count,
    failures: row.failures,
    consecutiveFailures: row.consecutive_failures,
    totalLatencyMs: row.total_latency_ms,
    minLatencyMs: row.min_latency_ms,
    maxLatencyMs: row.max_latency_ms,
    lastLatencyMs: row.last_latency_ms,
    lastInvokedAt: row.last_invoked_at,
    lastError: row.last_error,
    health: row.health as HealthStatus,
    healthDetail: row.health_detail,
    healthAuto: row.health_auto === 1,
  };
}

function viewOf(row: Row): RegistryEntry {
  return entryView(
    JSON.parse(row.init) as ParsedEntryInit,
    stateOf(row),
    row.registered_at,
    row.updated_at,
  );
}

/**
 * A registry persisted in a SQLite file (better-sqlite3, WAL mode): entries, health and running
 * stats survive restarts and are shared by every process using the file. Stats live in the
 * entry's row and are updated in an immediate transaction, so reads are one primary-key lookup
 * and concurrent writers never lose an update.
 *
 * @example
 * import { SqliteRegistry } from "@nerva/core/sqlite";
 * const registry = new SqliteRegistry({ path: "./registry.db" });
 */
export class SqliteRegistry implements Registry {
  readonly #db: SqliteDatabase;
  readonly #threshold: number;
  readonly #select: SqliteStatement;
  readonly #all: SqliteStatement;
  readonly #allOfKind: SqliteStatement;
  readonly #delete: SqliteStatement;
  readonly #register: (init: ParsedEntryInit, now: number) => Row;
  readonly #update: (kind: string, name: string, change: (s: StatsState) => void) => Row;

  constructor(options: SqliteRegistryOptions) {
    const o = parseOrThrow(
      SqliteRegistryOptionsSchema,
      options,
      ErrorCode.INVALID_OPTIONS,
      "options",
      'Pass { path: "./registry.db" } (or ":memory:"), and optionally tablePrefix, busyTimeoutSeconds and unhealthyAfterFailures.',
    );
    this.#threshold = o.unhealthyAfterFailures;
    const t = `${o.tablePrefix}registry`;
    const db = (this.#db = openDatabase(
      o.path,
      "options.path",
      "SqliteRegistry",
      Math.round(o.busyTimeoutSeconds * 1000),
    ));
    try {
      db.exec(`
      CREATE TABLE IF NOT EXISTS ${t} (
        kind TEXT NOT NULL, name TEXT NOT NULL, init TEXT NOT NULL,
        registered_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
        count INTEGER NOT NULL, failures INTEGER NOT NULL, consecutive_failures INTEGER NOT NULL,
        total_latency_ms REAL NOT NULL, min_latency_ms REAL, max_latency_ms REAL,
        last_latency_ms REAL, last_invoked_at INTEGER, last_error TEXT,
        health TEXT NOT NULL, health_detail TEXT, health_auto INTEGER NOT NULL,
        PRIMARY KEY (kind, name)) WITHOUT ROWID;
    `);
      this.#select = db.prepare(`SELECT * FROM ${t} WHERE kind = ? AND name = ?`);
      this.#all = db.prepare(`SELECT * FROM ${t}`);
      this.#allOfKind = db.prepare(`SELECT * FROM ${t} WHERE kind = ?`);
      this.#delete = db.prepare(`DELETE FROM ${t} WHERE kind = ? AND name = ?`);
      const insert = db.prepare(
        `INSERT INTO ${t} (kind, name, init, registered_at, updated_at, count, failures,
         consecutive_failures, total_latency_ms, min_latency_ms, max_latency_ms, last_latency_ms,
         last_invoked_at, last_error, health, health_detail, health_auto)
       VALUES (@kind, @name, @init, @registered_at, @updated_at, @count, @failures,
         @consecutive_failures, @total_latency_ms, @min_latency_ms, @max_latency_ms,
         @last_latency_ms, @last_invoked_at, @last_error, @health, @health_detail, @health_auto)`,
      );
      const reinit = db.prepare(
        `UPDATE ${t} SET init = ?, updated_at = ? WHERE kind = ? AND name = ?`,
      );
      const save = db.prepare(
        `UPDATE ${t} SET updated_at = @updated_at, count = @count, failures = @failures,
         consecutive_failures = @consecutive_failures, total_latency_ms = @total_latency_ms,
         min_latency_ms = @min_latency_ms, max_latency_ms = @max_latency_ms,
         last_latency_ms = @last_latency_ms, last_invoked_at = @last_invoked_at,
         last_error = @last_error, health = @health, health_detail = @health_detail,
         health_auto = @health_auto
       WHERE kind = @kind AND name = @name`,
      );
      const toRow = (
        kind: string,
        name: string,
        init: string,
        s: StatsState,
        reg: number,
        upd: number,
      ): Row => ({
        kind,
        name,
        init,
        registered_at: reg,
        updated_at: upd,
        count: s.count,
        failures: s.failures,
        consecutive_failures: s.consecutiveFailures,
        total_latency_ms: s.totalLatencyMs,
        min_latency_ms: s.minLatencyMs,
        max_latency_ms: s.maxLatencyMs,
        last_latency_ms: s.lastLatencyMs,
        last_invoked_at: s.lastInvokedAt,
        last_error: s.lastError,
        health: s.health,
        health_detail: s.healthDetail,
        health_auto: s.healthAuto ? 1 : 0,
      });
      const register = db.transaction((init: ParsedEntryInit, now: number): Row => {
        const json = JSON.stringify(init);
        const existing = this.#select.get(init.kind, init.name) as Row | undefined;
        if (existing === undefined) {
          const row = toRow(init.kind, init.name, json, emptyStats(), now, now);
          insert.run(row);
          return row;
        }
        reinit.run(json, now, init.kind, init.name);
        return { ...existing, init: json, updated_at: now };
      });
      // IMMEDIATE takes the write lock before reading, so two processes never lose an update.
      this.#register = (init, now) => register.immediate(init, now);
      const update = db.transaction(
        (kind: string, name: string, change: (s: StatsState) => void) => {
          const existing = this.#select.get(kind, name) as Row | undefined;
          if (existing === undefined) throw notFound(kind, name);
          const state = stateOf(existing);
          const health = state.health;
          change(state);
          const now = Date.now();
          const row = toRow(
            kind,
            name,
            existing.init,
            state,
            existing.registered_at,
            state.health === health ? existing.updated_at : now,
          );
          save.run(row);
          return row;
        },
      );
      this.#update = (kind, name, change) => update.immediate(kind, name, change);
    } catch (err) {
      // A refused file is never left open.
      db.close();
      throw openError(err, o.path, "options.path");
    }
  }

  async register(entry: RegistryEntryInit, ctx: ExecContext): Promise<RegistryEntry> {
    const init = parseEntry(entry);
    return this.#inSpan(ctx, "register", { kind: init.kind, name: init.name }, () =>
      viewOf(this.#open().#register(init, Date.now())),
    );
  }

  async unregister(kind: RegistryKind, name: string, ctx: ExecContext): Promise<boolean> {
    parseKey(kind, name);
    return this.#inSpan(
      ctx,
      "unregister",
      { kind, name },
      () => this.#open().#delete.run(kind, name).changes > 0,
    );
  }

  async get(kind: RegistryKind, name: string, ctx: ExecContext): Promise<RegistryEntry | null> {
    parseKey(kind, name);
    return this.#inSpan(ctx, "get", { kind, name }, () => {
      const row = this.#open().#select.get(kind, name) as Row | undefined;
      if (row === undefined) return null;
      const view = viewOf(row);
      return visible(view, ctx) ? view : null;
    });
  }

  async discover(ctx: ExecContext, filter: DiscoverFilter = {}): Promise<RegistryEntry[]> {
    const f = parseFilter(filter);
    return this.#inSpan(ctx, "discover", { kind: f.kind ?? "any" }, () => {
      const rows = (
        f.kind === undefined ? this.#open().#all.all() : this.#open().#allOfKind.all(f.kind)
      ) as Row[];
      return rows
        .map(viewOf)
        .filter((e) => matches(e, f) && visible(e, ctx))
        .sort(byKindThenName);
    });
  }

  async setHealth(
    kind: RegistryKind,
    name: string,
    health: HealthStatus,
    ctx: ExecContext,
    detail?: string,
  ): Promise<RegistryEntry> {
    parseKey(kind, name);
    const h = parseHealth(health);
    return this.#inSpan(ctx, "set_health", { kind, name, health: h }, () => {
      const row = this.#open().#update(kind, name, (s) => {
        s.health = h;
        s.healthDetail = detail ?? null;
        s.healthAuto = false;
      });
      return viewOf(row);
    });
  }

  async recordInvocation(
    kind: RegistryKind,
    name: string,
    record: InvocationRecord,
    ctx: ExecContext,
  ): Promise<InvocationStats> {
    parseKey(kind, name);
    const r = parseRecord(record);
    return this.#inSpan(ctx, "record", { kind, name, ok: r.ok }, () => {
      const row = this.#open().#update(kind, name, (s) =>
        applyInvocation(s, r, this.#threshold, Date.now()),
      );
      return statsView(stateOf(row));
    });
  }

  async stats(kind: RegistryKind, name: string, ctx: ExecContext): Promise<InvocationStats | null> {
    parseKey(kind, name);
    return this.#inSpan(ctx, "stats", { kind, name }, () => {
      const row = this.#open().#select.get(kind, name) as Row | undefined;
      if (row === undefined || !visible(viewOf(row), ctx)) return null;
      return statsView(stateOf(row));
    });
  }

  /** One operation in its span; a lock or I/O failure of the file is UNAVAILABLE. */
  #inSpan<T>(ctx: ExecContext, op: string, attrs: Attributes, fn: () => T): Promise<T> {
    return inSpan(ctx, op, attrs, () => {
      try {
        return fn();
      } catch (err) {
        throw unavailableError(err, "registry");
      }
    });
  }

  async close(): Promise<void> {
    if (this.#db.open) this.#db.close();
  }

  #open(): this {
    if (!this.#db.open) {
      throw new NervaError(
        ErrorCode.INTERNAL,
        "SqliteRegistry is closed; create a new one to keep using it.",
      );
    }
    return this;
  }
}
