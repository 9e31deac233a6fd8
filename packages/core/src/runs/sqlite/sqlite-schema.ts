import { ErrorCode, NervaError } from "../../errors.js";
import type { SqliteDatabase } from "../../internal/sqlite.js";

/**
 * The schema version this code writes. A file with a newer one is refused, never rewritten; an
 * older one is upgraded when opened. Version 2 keeps the holder's lease and attempt in columns
 * and takes a run's last event from its events (no `last_seq` column; the `doc`'s may lag), so
 * a write that only adds events and step values touches neither the run row nor its JSON.
 */
export const RUNS_SCHEMA_VERSION = 2;
const SCHEMA_NAME = "nerva-runs";

/** Table names for a prefix. */
export interface RunTables {
  readonly meta: string;
  readonly runs: string;
  readonly events: string;
  readonly values: string;
}

export function runTables(prefix: string): RunTables {
  return {
    meta: `${prefix}runs_meta`,
    runs: `${prefix}runs`,
    events: `${prefix}run_events`,
    values: `${prefix}run_values`,
  };
}

function refuse(path: string, message: string): NervaError {
  return new NervaError(ErrorCode.INVALID_OPTIONS, `Invalid options.path: ${message}`, {
    issues: [{ path: "options.path", message }],
    details: { path },
  });
}

/**
 * Creates the tables on a new file, checks the version on an existing one. Runs in an immediate
 * transaction so several processes opening one new file at once create it once. A file whose
 * tables were not made by this code, or by a newer version of it, is refused with
 * INVALID_OPTIONS saying what to do.
 */
export function ensureRunSchema(db: SqliteDatabase, t: RunTables, path: string): void {
  const exists = (name: string): boolean =>
    db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !==
    undefined;
  db.transaction(() => {
    if (exists(t.meta)) {
      const rows = db.prepare(`SELECT key, value FROM ${t.meta}`).all() as {
        key: string;
        value: string;
      }[];
      const meta = new Map(rows.map((r) => [r.key, r.value]));
      if (meta.get("schema") !== SCHEMA_NAME) {
        throw refuse(
          path,
          `table ${t.meta} in "${path}" was not written by Nerva's SqliteRunStore. Use another file or another tablePrefix.`,
        );
      }
      const version = Number(meta.get("version"));
      if (!(version <= RUNS_SCHEMA_VERSION)) {
        throw refuse(
          path,
          `"${path}" holds runs in schema version ${meta.get("version")}, newer than this Nerva understands (${RUNS_SCHEMA_VERSION}). Upgrade @nerva/core in this process, or point it at another file.`,
        );
      }
      if (version === 1) upgradeFromV1(db, t);
      createLiveIndex(db, t);
      return;
    }
    for (const table of [t.runs, t.events, t.values]) {
      if (exists(table)) {
        throw refuse(
          path,
          `"${path}" already has a table ${table} that Nerva's SqliteRunStore did not create. Use another file or another tablePrefix.`,
        );
      }
    }
    db.exec(`
      CREATE TABLE ${t.meta} (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE ${t.runs} (
        id TEXT PRIMARY KEY,
        queue TEXT NOT NULL,
        status TEXT NOT NULL,
        priority INTEGER NOT NULL,
        claimable_at INTEGER,
        idempotency_key TEXT,
        user_id TEXT,
        created_at INTEGER NOT NULL,
        finished_at INTEGER,
        doc TEXT NOT NULL,
        lease_worker_id TEXT,
        lease_fence INTEGER,
        attempt INTEGER NOT NULL DEFAULT 1,
        UNIQUE (queue, idempotency_key)
      );
      CREATE INDEX ${t.runs}_claim ON ${t.runs} (queue, priority, claimable_at)
        WHERE claimable_at IS NOT NULL;
      CREATE INDEX ${t.runs}_list ON ${t.runs} (queue, created_at, id);
      CREATE INDEX ${t.runs}_finished ON ${t.runs} (queue, finished_at)
        WHERE finished_at IS NOT NULL;
      CREATE TABLE ${t.events} (
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        type TEXT NOT NULL,
        at INTEGER NOT NULL,
        attempt INTEGER NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (run_id, seq)
      ) WITHOUT ROWID;
      CREATE TABLE ${t.values} (
        run_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (run_id, kind, key)
      ) WITHOUT ROWID;
    `);
    createLiveIndex(db, t);
    const put = db.prepare(`INSERT INTO ${t.meta} (key, value) VALUES (?, ?)`);
    put.run("schema", SCHEMA_NAME);
    put.run("version", String(RUNS_SCHEMA_VERSION));
  }).immediate();
}

/**
 * The pending and running runs of a queue, newest first: what a list of pending runs reads (the
 * backlog check of every graph trigger) without walking the queue's finished runs. Added to
 * files of any version (older code ignores it, and keeps it up to date as SQLite does).
 */
function createLiveIndex(db: SqliteDatabase, t: RunTables): void {
  db.exec(
    `CREATE INDEX IF NOT EXISTS ${t.runs}_live ON ${t.runs} (queue, created_at, id) WHERE claimable_at IS NOT NULL`,
  );
}

/** Version 1 → 2: the lease and attempt columns, filled from each record's JSON; no last_seq. */
function upgradeFromV1(db: SqliteDatabase, t: RunTables): void {
  db.exec(`
    ALTER TABLE ${t.runs} ADD COLUMN lease_worker_id TEXT;
    ALTER TABLE ${t.runs} ADD COLUMN lease_fence INTEGER;
    ALTER TABLE ${t.runs} ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1;
    UPDATE ${t.runs} SET
      lease_worker_id = json_extract(doc, '$.lease.workerId'),
      lease_fence = json_extract(doc, '$.lease.fence'),
      attempt = json_extract(doc, '$.attempt');
    ALTER TABLE ${t.runs} DROP COLUMN last_seq;
  `);
  db.prepare(`UPDATE ${t.meta} SET value = ? WHERE key = 'version'`).run(
    String(RUNS_SCHEMA_VERSION),
  );
}
