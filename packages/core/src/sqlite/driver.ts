import { ErrorCode, NervaError } from "../errors.js";
import { requireOptional } from "../internal/optional-dependency.js";

/** The part of a better-sqlite3 statement Nerva uses (kept structural: no type dependency). */
export interface SqliteStatement {
  run(...params: unknown[]): { changes: number; lastInsertRowid: number | bigint };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  /** Rows as arrays of column values instead of objects (the statement keeps the mode). */
  raw(toggle?: boolean): SqliteStatement;
}

/** The part of a better-sqlite3 database Nerva uses. */
export interface SqliteDatabase {
  prepare(sql: string): SqliteStatement;
  exec(sql: string): unknown;
  pragma(source: string, options?: { simple?: boolean }): unknown;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  transaction<F extends (...args: any[]) => any>(
    fn: F,
  ): F & { deferred: F; immediate: F; exclusive: F };
  close(): unknown;
  readonly open: boolean;
  readonly inTransaction: boolean;
}

type DatabaseConstructor = new (path: string, options?: { timeout?: number }) => SqliteDatabase;

let Database: DatabaseConstructor | null = null;

/**
 * Opens (creating if needed) a SQLite file with better-sqlite3 in WAL mode. `path` may be
 * `":memory:"`. Throws MISSING_DEPENDENCY when better-sqlite3 is absent and INVALID_OPTIONS
 * (naming `label`) when the file cannot be opened.
 */
export function openDatabase(path: string, label: string, purpose: string): SqliteDatabase {
  Database ??= requireOptional<DatabaseConstructor>(
    "better-sqlite3",
    purpose,
    "better-sqlite3@^12",
  );
  let db: SqliteDatabase;
  try {
    db = new Database(path, { timeout: 5000 });
  } catch (err) {
    throw new NervaError(
      ErrorCode.INVALID_OPTIONS,
      `Invalid ${label}: cannot open SQLite database "${path}" (${err instanceof Error ? err.message : String(err)}). Point it at a writable file whose directory exists.`,
      { cause: err, issues: [{ path: label, message: "cannot be opened" }] },
    );
  }
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma("foreign_keys = ON");
  return db;
}

/** Validates an SQL identifier prefix so it can be spliced into table names safely. */
export const TABLE_PREFIX = /^[A-Za-z_][A-Za-z0-9_]{0,30}$/;
