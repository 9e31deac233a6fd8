import type { Redis } from "ioredis";
import { z } from "zod";
import { ErrorCode, parseOrThrow } from "../errors.js";
import {
  REDIS_PREFIX,
  oneConnection,
  openRedisClient,
  redisConnectionFields,
} from "../internal/redis-connection.js";
import { RedisMemoryStore } from "../memory/redis-memory-store.js";
import { RedisLimitStore } from "../policy/redis-limit-store.js";
import { RedisRegistry } from "../registry/redis-registry.js";
import { RedisRunStore } from "../runs/redis/redis-run-store.js";
import { RedisSharedStateStore } from "../graph/execute/redis-shared-state.js";
import { composeBackend, type Backend } from "./backend.js";

const RedisBackendOptionsSchema = z
  .object({
    ...redisConnectionFields("nerva"),
    prefix: z
      .string()
      .regex(REDIS_PREFIX, "must be 1-64 letters, digits, '_', '.', ':' or '-'")
      .refine((p) => !p.endsWith(":"), "must not end with ':' (the parts add ':<part>:')")
      .default("nerva"),
  })
  .strict()
  .refine(...oneConnection);
/** Options of {@link redisBackend}. */
export type RedisBackendOptions = z.input<typeof RedisBackendOptionsSchema>;

/**
 * Every piece of shared state on one Redis, so an app is correct on any number of replicas:
 * runs under `<prefix>:`, memory under `<prefix>:memory:`, the registry
 * under `<prefix>:registry:`, rate limits and budgets under `<prefix>:limits:`, graphs' shared
 * state under `<prefix>:shared:` (the defaults of
 * each part when `prefix` is `nerva`). Memory, registry, limits and shared state share one client (yours when
 * you pass `client`, left open by `close()`); the run store opens its own connections (commands, pub/sub
 * and a blocking wait per queue) to the same server. Needs the optional peer dependency ioredis (^5).
 *
 * @example
 * const backend = redisBackend({ url: process.env.REDIS_URL });
 * const orchestrator = new Orchestrator({ router, runtime, memory: backend.memory(), registry: backend.registry, policy: backend.policy(document) });
 */
export function redisBackend(options: RedisBackendOptions = {}): Backend {
  const o = parseOrThrow(
    RedisBackendOptionsSchema,
    options,
    ErrorCode.INVALID_OPTIONS,
    "options",
    'Pass { url: "redis://host:6379" } or { client: an ioredis client }, and optionally prefix and timeoutSeconds.',
  );
  const client = o.client ?? openRedisClient(o.url, o.timeoutSeconds, "redisBackend");
  const shared = { client, timeoutSeconds: o.timeoutSeconds };
  const runs =
    o.client === undefined
      ? new RedisRunStore({ url: o.url ?? "redis://127.0.0.1:6379", prefix: o.prefix })
      : new RedisRunStore({ connection: connectionOf(o.client), prefix: o.prefix });
  return composeBackend({
    kind: "redis",
    runs,
    memoryStore: new RedisMemoryStore({ ...shared, prefix: `${o.prefix}:memory:` }),
    registry: new RedisRegistry({ ...shared, prefix: `${o.prefix}:registry:` }),
    limits: new RedisLimitStore({ ...shared, prefix: `${o.prefix}:limits:` }),
    sharedState: new RedisSharedStateStore({ ...shared, prefix: `${o.prefix}:shared:` }),
    // A client of the backend's own is closed with it; the caller's stays open.
    onClose: o.client === undefined ? () => quit(client) : undefined,
  });
}

/** The server `client` talks to, as ioredis options for the run store's own connections. */
function connectionOf(client: Redis): Record<string, unknown> {
  const picked: Record<string, unknown> = {};
  const options = client.options as unknown as Record<string, unknown>;
  for (const key of ["host", "port", "path", "family", "username", "password", "db", "tls"]) {
    if (options[key] !== undefined) picked[key] = options[key];
  }
  return picked;
}

async function quit(client: Redis): Promise<void> {
  await client.quit().catch(() => client.disconnect());
}
