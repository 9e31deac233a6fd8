// Every piece of state the example apps keep, in one place: in Redis when REDIS_URL is set (any
// number of replicas share it), otherwise embedded in this process. Nothing else in the apps
// builds a store.
import { InMemoryRunStore, RunQueue, type RunStore } from "@nerva/core";
import { TieredMemory } from "@nerva/core/memory";
import { InMemoryLimitStore, type LimitStore } from "@nerva/core/policy";
import { InMemoryRegistry, type Registry } from "@nerva/core/registry";
import type { ExampleConfig } from "./config.js";

/**
 * Where an example app keeps its state (see {@link createExampleState}): conversation memory, the
 * registry, rate-limit windows and budget ledgers (`limits`), approvals (paused runs of
 * `approvals`) and durable runs (`runs`).
 *
 * @example
 * const state: ExampleState = await createExampleState(exampleConfigOf(process.env));
 */
export interface ExampleState {
  /** `redis` (shared by every replica) or `embedded` (this process only). */
  readonly mode: "redis" | "embedded";
  readonly memory: TieredMemory;
  readonly registry: Registry;
  readonly limits: LimitStore;
  readonly approvals: RunQueue;
  readonly runs: RunQueue;
  /** Closes every store and connection made here. */
  close(): Promise<void>;
}

/**
 * Builds the state of an example app. With `config.redisUrl`: memory, registry and limits on one
 * ioredis connection, runs and approvals on a `RedisRunStore` (BullMQ), every key under
 * `config.redisPrefix`. Without: in-memory stores of this process (a restart forgets them).
 *
 * @example
 * const state = await createExampleState(exampleConfigOf({}));
 * state.mode; // "embedded"
 * await state.close();
 */
export async function createExampleState(config: ExampleConfig): Promise<ExampleState> {
  if (config.redisUrl === null) {
    const store: RunStore = new InMemoryRunStore();
    const memory = new TieredMemory();
    const registry = new InMemoryRegistry();
    const limits = new InMemoryLimitStore();
    return {
      mode: "embedded",
      memory,
      registry,
      limits,
      runs: new RunQueue({ store, name: "runs" }),
      approvals: new RunQueue({ store, name: "approvals" }),
      close: async () => {
        await memory.close();
        await registry.close();
        await limits.close();
        await store.close();
      },
    };
  }
  const [{ Redis }, redis] = await Promise.all([import("ioredis"), import("@nerva/core/redis")]);
  const p = config.redisPrefix;
  const client = new Redis(config.redisUrl, { maxRetriesPerRequest: 1 });
  const memory = new TieredMemory({
    store: new redis.RedisMemoryStore({ client, prefix: `${p}:memory:` }),
  });
  const registry = new redis.RedisRegistry({ client, prefix: `${p}:registry:` });
  const limits = new redis.RedisLimitStore({ client, prefix: `${p}:limits:` });
  const store = new redis.RedisRunStore({ url: config.redisUrl, prefix: `${p}:runs` });
  return {
    mode: "redis",
    memory,
    registry,
    limits,
    runs: new RunQueue({ store, name: "runs" }),
    approvals: new RunQueue({ store, name: "approvals" }),
    close: async () => {
      await memory.close();
      await registry.close();
      await limits.close();
      await store.close();
      await client.quit();
    },
  };
}
