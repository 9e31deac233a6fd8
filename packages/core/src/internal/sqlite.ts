import { ErrorCode, NervaError } from "../errors.js";
import { requireOptional } from "./optional-dependency.js";

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

/** What went wrong with a file, by SQLite's primary result code. */
function problemOf(code: string): string {
  if (code.startsWith("SQLITE_NOTADB")) return "is not a SQLite database";
  if (code.startsWith("SQLITE_CORRUPT"))
    return "is a damaged SQLite database (truncated or corrupt)";
  if (/^SQLITE_(READONLY|PERM|AUTH)/.test(code)) return "cannot be written";
  if (code.startsWith("SQLITE_CANTOPEN")) return "cannot be opened or created";
  if (code.startsWith("SQLITE_FULL")) return "cannot grow: the disk is full";
  return "cannot be used";
}

const FIXES: Readonly<Record<string, string>> = {
  "is not a SQLite database":
    "Point it at a SQLite file, or at a path where no file exists yet (it is created).",
  "is a damaged SQLite database (truncated or corrupt)":
    "Restore the file from a backup, or point it at another file.",
};

/**
 * The NervaError for a SQLite file that could not be opened and set up: UNAVAILABLE (retryable,
 * no path in the message, which clients may read) while another connection or process holds a
 * lock, INVALID_OPTIONS naming `label`, the path and what is wrong with the file otherwise. A
 * NervaError (e.g. a schema refusal) is returned as it is.
 */
export function openError(err: unknown, path: string, label: string): NervaError {
  if (err instanceof NervaError) return err;
  const code = String((err as { code?: unknown } | null)?.code ?? "SQLITE_ERROR");
  const text = err instanceof Error ? err.message : String(err);
  if (/^SQLITE_(BUSY|LOCKED)/.test(code)) {
    return new NervaError(
      ErrorCode.UNAVAILABLE,
      `The SQLite file of ${label} is locked by another connection or process (${code}). Retry later, or raise busyTimeoutSeconds to wait longer.`,
      { cause: err, details: { retryAfterSeconds: 1, sqliteCode: code } },
    );
  }
  const problem = problemOf(code);
  const fix =
    FIXES[problem] ??
    `Point it at a writable file whose directory exists and is writable (SQLite also creates "-wal" and "-shm" files beside it).`;
  return new NervaError(
    ErrorCode.INVALID_OPTIONS,
    `Invalid ${label}: "${path}" ${problem} (${code}: ${text}). ${fix}`,
    { cause: err, issues: [{ path: label, message: problem }], details: { sqliteCode: code } },
  );
}

/**
 * A lock or I/O failure of a store already open as UNAVAILABLE (retryable; no path in the
 * message, which clients may read); anything else as it is.
 */
export function unavailableError(err: unknown, store: string): unknown {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === "string" && /^SQLITE_(BUSY|LOCKED|IOERR|PROTOCOL)/.test(code)) {
    return new NervaError(
      ErrorCode.UNAVAILABLE,
      `The SQLite file of the ${store} is unavailable (${code}): another process holds its write lock, or the disk failed. Retry later, or raise busyTimeoutSeconds to wait longer.`,
      { cause: err, details: { retryAfterSeconds: 1, sqliteCode: code } },
    );
  }
  return err;
}

/**
 * Runs `setUp` on a freshly opened `db` (schema, statements); on any failure closes the handle
 * and throws {@link openError}, so a refused file is never left open.
 */
export function setUpDatabase<T>(
  db: SqliteDatabase,
  path: string,
  label: string,
  setUp: () => T,
): T {
  try {
    return setUp();
  } catch (err) {
    db.close();
    throw openError(err, path, label);
  }
}

/**
 * Opens (creating if needed) a SQLite file with better-sqlite3 in WAL mode, waiting up to
 * `busyTimeoutMs` (default 5,000) for another process's lock. `path` may be `":memory:"`. Throws
 * MISSING_DEPENDENCY when better-sqlite3 is absent, INVALID_OPTIONS (naming `label`) for a path
 * with a NUL byte or a file that cannot be opened, is not a database, is damaged or cannot be
 * written, and UNAVAILABLE while another process holds a lock; the handle is closed on failure.
 */
export function openDatabase(
  path: string,
  label: string,
  purpose: string,
  busyTimeoutMs = 5_000,
): SqliteDatabase {
  // SQLite would read the path up to the NUL and open another file than the one named.
  if (path.includes("\0")) {
    throw new NervaError(
      ErrorCode.INVALID_OPTIONS,
      `Invalid ${label}: ${JSON.stringify(path)} contains a NUL byte, which would cut the path short. Pass the file's path without it.`,
      { issues: [{ path: label, message: "must not contain a NUL byte" }] },
    );
  }
  Database ??= requireOptional<DatabaseConstructor>(
    "better-sqlite3",
    purpose,
    "better-sqlite3@^12",
  );
  let db: SqliteDatabase;
  try {
    db = new Database(path, { timeout: busyTimeoutMs });
  } catch (err) {
    throw openError(err, path, label);
  }
  return setUpDatabase(db, path, label, () => {
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = NORMAL");
    db.pragma("foreign_keys = ON");
    // Reads the schema now, so that a file that is not a database, or is damaged, is refused here.
    db.prepare("SELECT count(*) FROM sqlite_master").get();
    return db;
  });
}

/**
 * How a statement takes its row limit as a parameter. SQLite (built with STAT4, as
 * better-sqlite3 is) prepares a statement with a bare `LIMIT ?` again each time it runs with a
 * new binding, ~5 µs a call, more than the query itself; an expression is bound without that.
 */
export const LIMIT_PARAM = "LIMIT CAST(? AS INTEGER)";

/** Validates an SQL identifier prefix so it can be spliced into table names safely. */
export const TABLE_PREFIX = /^[A-Za-z_][A-Za-z0-9_]{0,30}$/;
