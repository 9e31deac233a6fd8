// Public entry of @nerva/core/memory: tiered conversation memory keyed by identity, the
// MemoryStore interface and the in-memory store; SqliteMemoryStore is at @nerva/core/sqlite.
export {
  MemoryKind,
  type Memory,
  type MemoryEventInit,
  type MemoryItem,
  type MemoryQuery,
  type MemoryRead,
  type MemoryReadResult,
  type MemoryRecall,
  type MemoryStore,
  type MemoryWrite,
  type ScoredMemoryItem,
  type TurnRole,
} from "./types.js";
export { memoryNamespace, type MemoryNamespace } from "./namespace.js";
export { TieredMemory, type TieredMemoryOptions } from "./tiered-memory.js";
export { InMemoryMemoryStore } from "./in-memory-store.js";
