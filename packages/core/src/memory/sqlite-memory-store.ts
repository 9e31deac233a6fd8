import { z } from "zod";
import { ErrorCode, parseOrThrow } from "../errors.js";
import {
  LIMIT_PARAM,
  openDatabase,
  openError,
  unavailableError,
  TABLE_PREFIX,
  type SqliteDatabase,
  type SqliteStatement,
} from "../internal/sqlite.js";
import type { JsonValue } from "../types/agent.js";
import { checkItemMetadata, closedError } from "./in-memory-store.js";
import { cosine, topK } from "./similarity.js";
import type {
  MemoryItem,
  MemoryKind,
  MemoryRead,
  MemoryReadResult,
  MemoryStore,
  MemoryWrite,
  TurnRole,
} from "./types.js";

export const SqliteMemoryStoreOptionsSchema = z
  .object({
    path: z.string().min(1),
    tablePrefix: z.string().regex(TABLE_PREFIX, "must be a SQL identifier").default("nerva_"),
    /** How long opening and each write wait for another process's lock before UNAVAILABLE. */
    busyTimeoutSeconds: z.number().min(0).max(600).finite().default(5),
  })
  .strict();
/** Options of {@link SqliteMemoryStore}. */
export type SqliteMemoryStoreOptions = z.input<typeof SqliteMemoryStoreOptionsSchema>;

interface Row {
  seq: number;
  id: string;
  kind: string;
  role: string | null;
  key: string | null;
  content: string;
  metadata: string;
  created_at: number;
}
interface ColdRow extends Row {
  vector: Buffer;
}

const COLUMNS = "seq, id, kind, role, key, content, metadata, created_at";

function toItem(row: Row): MemoryItem {
  return Object.freeze({
    id: row.id,
    kind: row.kind as MemoryKind,
    role: row.role as TurnRole | null,
    key: row.key,
    content: row.content,
    metadata: Object.freeze(JSON.parse(row.metadata) as Record<string, JsonValue>),
    createdAt: row.created_at,
  });
}

function toBlob(vector: readonly number[]): Buffer {
  return Buffer.from(Float64Array.from(vector).buffer);
}

function fromBlob(blob: Buffer): Float64Array {
  // Copy into a fresh (8-byte aligned) buffer: SQLite blobs may start at any offset.
  return new Float64Array(new Uint8Array(blob).buffer);
}

/**
 * Memory persisted in a SQLite file (better-sqlite3, WAL mode). Each `write` runs in one
 * transaction, so a crash never leaves half an event behind; every query filters by namespace.
 * Cold search scores the namespace's vectors in process (fine up to tens of thousands of items).
 *
 * @example
 * import { SqliteMemoryStore } from "@nerva/core/sqlite";
 * const memory = new TieredMemory({ store: new SqliteMemoryStore({ path: "./memory.db" }) });
 */
export class SqliteMemoryStore implements MemoryStore {
  readonly #db: SqliteDatabase;
  readonly #write: (w: MemoryWrite) => void;
  readonly #hot: SqliteStatement;
  readonly #warm: SqliteStatement;
  readonly #cold: SqliteStatement;

  constructor(options: SqliteMemoryStoreOptions) {
    const o = parseOrThrow(
      SqliteMemoryStoreOptionsSchema,
      options,
      ErrorCode.INVALID_OPTIONS,
      "options",
      'Pass { path: "./memory.db" } (or ":memory:"), and optionally tablePrefix and busyTimeoutSeconds.',
    );
    const t = o.tablePrefix;
    this.#db = openDatabase(
      o.path,
      "options.path",
      "SqliteMemoryStore",
      Math.round(o.busyTimeoutSeconds * 1000),
    );
    const db = this.#db;
    try {
      db.exec(`
      CREATE TABLE IF NOT EXISTS ${t}memory_hot (
        seq INTEGER PRIMARY KEY AUTOINCREMENT, namespace TEXT NOT NULL, session TEXT NOT NULL,
        id TEXT NOT NULL, kind TEXT NOT NULL, role TEXT, key TEXT, content TEXT NOT NULL,
        metadata TEXT NOT NULL, created_at INTEGER NOT NULL);
      CREATE INDEX IF NOT EXISTS ${t}memory_hot_ns ON ${t}memory_hot (namespace, session, seq);
      CREATE TABLE IF NOT EXISTS ${t}memory_warm (
        seq INTEGER PRIMARY KEY AUTOINCREMENT, namespace TEXT NOT NULL,
        id TEXT NOT NULL, kind TEXT NOT NULL, role TEXT, key TEXT, content TEXT NOT NULL,
        metadata TEXT NOT NULL, created_at INTEGER NOT NULL);
      CREATE INDEX IF NOT EXISTS ${t}memory_warm_ns ON ${t}memory_warm (namespace, seq);
      CREATE UNIQUE INDEX IF NOT EXISTS ${t}memory_warm_key ON ${t}memory_warm (namespace, key)
        WHERE key IS NOT NULL;
      CREATE TABLE IF NOT EXISTS ${t}memory_cold (
        seq INTEGER PRIMARY KEY AUTOINCREMENT, namespace TEXT NOT NULL,
        id TEXT NOT NULL, kind TEXT NOT NULL, role TEXT, key TEXT, content TEXT NOT NULL,
        metadata TEXT NOT NULL, created_at INTEGER NOT NULL, vector BLOB NOT NULL);
      CREATE INDEX IF NOT EXISTS ${t}memory_cold_ns ON ${t}memory_cold (namespace, id);
    `);
      const insertHot = db.prepare(
        `INSERT INTO ${t}memory_hot (namespace, session, id, kind, role, key, content, metadata, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      );
      const trimHot = db.prepare(
        `DELETE FROM ${t}memory_hot WHERE namespace = ? AND session = ? AND seq <= (
         SELECT seq FROM ${t}memory_hot WHERE namespace = ? AND session = ?
         ORDER BY seq DESC LIMIT 1 OFFSET ?)`,
      );
      const findKey = db.prepare(`SELECT id FROM ${t}memory_warm WHERE namespace = ? AND key = ?`);
      const deleteWarm = db.prepare(`DELETE FROM ${t}memory_warm WHERE namespace = ? AND id = ?`);
      const deleteCold = db.prepare(`DELETE FROM ${t}memory_cold WHERE namespace = ? AND id = ?`);
      const insertWarm = db.prepare(
        `INSERT INTO ${t}memory_warm (namespace, id, kind, role, key, content, metadata, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      );
      const insertCold = db.prepare(
        `INSERT INTO ${t}memory_cold (namespace, id, kind, role, key, content, metadata, created_at, vector)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      );
      this.#hot = db.prepare(
        `SELECT ${COLUMNS} FROM ${t}memory_hot WHERE namespace = ? AND session = ? ORDER BY seq DESC ${LIMIT_PARAM}`,
      );
      this.#warm = db.prepare(
        `SELECT ${COLUMNS} FROM ${t}memory_warm WHERE namespace = ? ORDER BY seq DESC ${LIMIT_PARAM}`,
      );
      this.#cold = db.prepare(`SELECT ${COLUMNS}, vector FROM ${t}memory_cold WHERE namespace = ?`);
      // One transaction per write: every tier of the event is written, or none is.
      this.#write = db.transaction((w: MemoryWrite) => {
        const i = w.item;
        const fields = [
          i.id,
          i.kind,
          i.role,
          i.key,
          i.content,
          JSON.stringify(i.metadata),
          i.createdAt,
        ];
        if (w.hot !== undefined) {
          insertHot.run(w.namespace, w.session, ...fields);
          trimHot.run(w.namespace, w.session, w.namespace, w.session, w.hot.limit);
        }
        if (w.warm === true) {
          if (i.key !== null) {
            const previous = findKey.get(w.namespace, i.key) as { id: string } | undefined;
            if (previous !== undefined) {
              deleteWarm.run(w.namespace, previous.id);
              deleteCold.run(w.namespace, previous.id);
            }
          }
          insertWarm.run(w.namespace, ...fields);
        }
        if (w.vector !== undefined) insertCold.run(w.namespace, ...fields, toBlob(w.vector));
      });
    } catch (err) {
      // A refused file is never left open.
      db.close();
      throw openError(err, o.path, "options.path");
    }
  }

  async write(w: MemoryWrite): Promise<void> {
    this.#checkOpen();
    checkItemMetadata(w.item);
    try {
      this.#write(w);
    } catch (err) {
      throw unavailableError(err, "memory store");
    }
  }

  async read(r: MemoryRead): Promise<MemoryReadResult> {
    this.#checkOpen();
    try {
      return this.#read(r);
    } catch (err) {
      throw unavailableError(err, "memory store");
    }
  }

  #read(r: MemoryRead): MemoryReadResult {
    const hot =
      r.hotLimit > 0
        ? (this.#hot.all(r.namespace, r.session, r.hotLimit) as Row[]).reverse().map(toItem)
        : [];
    const warm =
      r.warmLimit > 0 ? (this.#warm.all(r.namespace, r.warmLimit) as Row[]).map(toItem) : [];
    let cold: MemoryReadResult["cold"] = [];
    if (r.cold !== undefined && r.cold.limit > 0) {
      const query = r.cold.vector;
      cold = topK(
        (this.#cold.all(r.namespace) as ColdRow[]).map((row) => ({
          value: row,
          score: cosine(fromBlob(row.vector), query),
          order: row.seq,
        })),
        r.cold.limit,
      ).map(({ value, score }) => ({ item: toItem(value), score }));
    }
    return { hot, warm, cold };
  }

  async close(): Promise<void> {
    if (this.#db.open) this.#db.close();
  }

  #checkOpen(): void {
    if (!this.#db.open) throw closedError("SqliteMemoryStore");
  }
}
