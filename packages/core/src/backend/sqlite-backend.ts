import { z } from "zod";
import { ErrorCode, parseOrThrow } from "../errors.js";
import { SqliteMemoryStore } from "../memory/sqlite-memory-store.js";
import { InMemoryLimitStore } from "../policy/in-memory-limit-store.js";
import { SqliteRegistry } from "../registry/sqlite-registry.js";
import { SqliteRunStore } from "../runs/sqlite/sqlite-run-store.js";
import { InMemorySharedStateStore } from "../graph/execute/shared-state-store.js";
import { composeBackend, type Backend } from "./backend.js";

const SqliteBackendOptionsSchema = z
  .object({
    /** The SQLite file every part keeps its tables in (created when missing). */
    path: z.string().min(1),
  })
  .strict();
/** Options of {@link sqliteBackend}. */
export type SqliteBackendOptions = z.input<typeof SqliteBackendOptionsSchema>;

/**
 * Runs, memory and the registry in one SQLite file (better-sqlite3 12, an optional peer
 * dependency), so every process on the machine that opens the file shares them and a restart
 * keeps them. Rate limits, budgets and graphs' shared state stay in each process's memory (a `RedisLimitStore` counts
 * them across processes: `redisBackend`).
 *
 * @example
 * const backend = sqliteBackend({ path: "./nerva.db" });
 * const runner = new Runner({ queue: backend.queue("runs"), runtime });
 */
export function sqliteBackend(options: SqliteBackendOptions): Backend {
  const { path } = parseOrThrow(
    SqliteBackendOptionsSchema,
    options,
    ErrorCode.INVALID_OPTIONS,
    "options",
    'Pass { path: "./nerva.db" }.',
  );
  const runs = new SqliteRunStore({ path });
  let memoryStore: SqliteMemoryStore | undefined;
  try {
    memoryStore = new SqliteMemoryStore({ path });
    return composeBackend({
      kind: "sqlite",
      runs,
      memoryStore,
      registry: new SqliteRegistry({ path }),
      limits: new InMemoryLimitStore(),
      sharedState: new InMemorySharedStateStore(),
    });
  } catch (err) {
    void runs.close();
    void memoryStore?.close();
    throw err;
  }
}
