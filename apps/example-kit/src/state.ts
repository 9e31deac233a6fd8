// Where the example apps keep every piece of state, chosen in one call: in Redis when REDIS_URL is
// set (any number of replicas share it), otherwise embedded in this process. Nothing else in the
// apps builds a store.
import { embeddedBackend, type Backend } from "@nerva/core/backend";
import type { ExampleConfig } from "./config.js";

/**
 * The backend of an example app: `redisBackend` on `config.redisUrl` with every key under
 * `config.redisPrefix` (memory, registry, rate limits and budgets, approvals and durable runs,
 * shared by every replica), or `embeddedBackend()` without it (this process; a restart forgets
 * it). `@nerva/core/redis` (and so ioredis) is loaded only for Redis.
 *
 * @example
 * const backend = await exampleBackend(exampleConfigOf({}));
 * backend.kind; // "memory"
 * await backend.close();
 */
export async function exampleBackend(config: ExampleConfig): Promise<Backend> {
  if (config.redisUrl === null) return embeddedBackend();
  const { redisBackend } = await import("@nerva/core/redis");
  return redisBackend({ url: config.redisUrl, prefix: config.redisPrefix });
}
