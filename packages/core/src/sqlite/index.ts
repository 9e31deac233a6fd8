// Public entry of @nerva/core/sqlite: SQLite-backed implementations. They load the optional peer
// dependency better-sqlite3 (^12) on first use and throw NervaError MISSING_DEPENDENCY without it.

export {
  SqliteMemoryStore,
  SqliteMemoryStoreOptionsSchema,
  type SqliteMemoryStoreOptions,
} from "../memory/sqlite-memory-store.js";
export {
  SqliteRegistry,
  SqliteRegistryOptionsSchema,
  type SqliteRegistryOptions,
} from "../registry/sqlite-registry.js";
export {
  SqliteRunStore,
  SqliteRunStoreOptionsSchema,
  type SqliteRunStoreOptions,
} from "../runs/sqlite/sqlite-run-store.js";
export { sqliteBackend, type SqliteBackendOptions } from "../backend/sqlite-backend.js";
