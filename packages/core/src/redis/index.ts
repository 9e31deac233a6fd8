// Public entry of @nerva/core/redis: durable runs on Redis, and memory, the registry, the policy's
// rate limits and budgets and graphs' shared state on Redis, so that every replica of an app
// shares them. Loads the optional peer dependency ioredis (^5) on first use and throws NervaError
// MISSING_DEPENDENCY when it is missing.

export {
  RedisRunStore,
  RedisRunStoreOptionsSchema,
  type RedisRunStoreOptions,
} from "../runs/redis/redis-run-store.js";
export {
  RedisMemoryStore,
  RedisMemoryStoreOptionsSchema,
  type RedisMemoryStoreOptions,
} from "../memory/redis-memory-store.js";
export {
  RedisRegistry,
  RedisRegistryOptionsSchema,
  type RedisRegistryOptions,
} from "../registry/redis-registry.js";
export {
  RedisLimitStore,
  RedisLimitStoreOptionsSchema,
  type RedisLimitStoreOptions,
} from "../policy/redis-limit-store.js";
export { redisBackend, type RedisBackendOptions } from "../backend/redis-backend.js";
export {
  RedisSharedStateStore,
  RedisSharedStateStoreOptionsSchema,
  type RedisSharedStateStoreOptions,
} from "../graph/execute/redis-shared-state.js";
