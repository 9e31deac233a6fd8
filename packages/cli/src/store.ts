import { existsSync } from "node:fs";
import { ErrorCode, NervaError, type RunStore } from "@nerva/core";
import { shellWord, type Values } from "./flags.js";

/** A queue of a SQLite file of runs and how many runs it holds. */
export interface QueueCount {
  readonly name: string;
  readonly runs: number;
}

/** The record that keeps a runtime's session key: a run of the store, not one a person started. */
export const SESSION_KEY_HANDLER = "nerva.session-key";

const RUNS_TABLE = "nerva_runs";

export function isRedisUrl(where: string): boolean {
  return /^rediss?:\/\//.test(where);
}

/**
 * Checks that `path` is an existing SQLite file holding Nerva's runs and returns its queues, read
 * without writing: a viewer must not create a database (or tables) where there was none.
 */
export async function sqliteQueues(path: string): Promise<QueueCount[]> {
  if (!existsSync(path)) {
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      `--store ${shellWord(path)} does not exist: pass the SQLite file your app or nerva run wrote its runs to.`,
    );
  }
  const { default: Database } = await import("better-sqlite3");
  let db;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
    const table = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?")
      .get(RUNS_TABLE);
    if (table === undefined) {
      throw new NervaError(
        ErrorCode.INVALID_INPUT,
        `--store ${shellWord(path)} holds no runs (no table ${RUNS_TABLE}): pass the SQLite file your app or nerva run wrote its runs to.`,
      );
    }
    // The session key's record is left out: it is the store's, not a run anybody started.
    return db
      .prepare(
        `SELECT queue AS name, COUNT(*) AS runs FROM ${RUNS_TABLE} WHERE json_extract(doc, '$.handlers[0]') IS NOT ? GROUP BY queue ORDER BY queue`,
      )
      .all(SESSION_KEY_HANDLER) as QueueCount[];
  } catch (err) {
    if (err instanceof NervaError) throw err;
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      `--store ${shellWord(path)} is not a SQLite file of runs (${(err as Error).message}).`,
    );
  } finally {
    db?.close();
  }
}

/** Opens the store `--store` names (a SQLite file that must exist, or a Redis URL). */
export async function openStore(values: Values): Promise<RunStore> {
  const where = values.store;
  if (typeof where !== "string") {
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      "--store is required: the SQLite file of the queue (e.g. --store runs.db) or its Redis URL (e.g. --store redis://127.0.0.1:6379).",
    );
  }
  if (isRedisUrl(where)) {
    const { RedisRunStore } = await import("@nerva/core/redis");
    const prefix = values.prefix;
    return new RedisRunStore(typeof prefix === "string" ? { url: where, prefix } : { url: where });
  }
  if (values.prefix !== undefined) {
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      "--prefix names the key prefix of a Redis store: it goes with --store redis://host:port only.",
    );
  }
  await sqliteQueues(where);
  const { SqliteRunStore } = await import("@nerva/core/sqlite");
  return new SqliteRunStore({ path: where });
}
