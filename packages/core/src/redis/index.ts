// Public entry of @nerva/core/redis: durable runs on Redis, delivered by BullMQ. Loads the
// optional peer dependencies bullmq (^6) and ioredis (^5) on first use and throws NervaError
// MISSING_DEPENDENCY naming the one that is missing.

export {
  RedisRunStore,
  RedisRunStoreOptionsSchema,
  type RedisRunStoreOptions,
} from "../runs/redis/redis-run-store.js";
