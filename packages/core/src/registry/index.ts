// Public entry of @nerva/core/registry: the Registry interface (agents and tools with health and
// invocation stats) and the in-memory one; SqliteRegistry is at @nerva/core/sqlite.
export {
  HealthStatus,
  RegistryKind,
  type DiscoverFilter,
  type InvocationRecord,
  type InvocationStats,
  type Registry,
  type RegistryEntry,
  type RegistryEntryInit,
} from "./types.js";
export { InMemoryRegistry } from "./in-memory-registry.js";
export type { RegistryOptions } from "./shared.js";
