import {
  DeclarativePolicyEngine,
  type DeclarativePolicyOptions,
} from "../declarative-policy/declarative-engine.js";
import type { SharedStateStore } from "../graph/execute/shared-state-store.js";
import type { PolicyDocumentInit } from "../policy/document.js";
import type { LimitStore } from "../policy/limit-store.js";
import type { Registry } from "../registry/types.js";
import type { MemoryStore } from "../memory/types.js";
import { TieredMemory, type TieredMemoryOptions } from "../memory/tiered-memory.js";
import type { RunQueueOptions } from "../runs/options.js";
import { RunQueue } from "../runs/run-queue.js";
import type { RunStore } from "../runs/store.js";

/**
 * Where every piece of state an app shares between requests lives (runs, memory, the registry,
 * rate limits and budgets, graphs' shared state), chosen once:
 * `embeddedBackend()` (this process), `sqliteBackend({ path })` (`@nerva/core/sqlite`: one
 * machine) or `redisBackend({ url })` (`@nerva/core/redis`: any number of replicas). The app
 * builds its primitives from it, so moving the whole app is a change of one line.
 *
 * @example
 * const backend = process.env.REDIS_URL ? redisBackend({ url: process.env.REDIS_URL }) : embeddedBackend();
 * const orchestrator = new Orchestrator({ router, runtime, memory: backend.memory(), registry: backend.registry, policy: backend.policy(document) });
 * const runner = new Runner({ queue: backend.queue("runs"), runtime });
 */
export interface Backend {
  /** `"memory"`, `"sqlite"` or `"redis"`: what the state is kept in. */
  readonly kind: string;
  /** Durable runs: records, steps, events; approvals and graph runs are runs too. */
  readonly runs: RunStore;
  /** Conversation memory's tiers (give it to `TieredMemory`, or call {@link memory}). */
  readonly memoryStore: MemoryStore;
  /** Registry entries, health and invocation stats. */
  readonly registry: Registry;
  /** Rate-limit windows and budget ledgers with their holds (the policy engine's `limits`). */
  readonly limits: LimitStore;
  /** Graphs' shared state (a GraphHost's `sharedState: { isolation, store }`). */
  readonly sharedState: SharedStateStore;
  /** The queue `name` on {@link runs}; the same object for the same name. */
  queue(name: string, options?: Omit<RunQueueOptions, "store" | "name">): RunQueue;
  /** A `TieredMemory` over {@link memoryStore}. */
  memory(options?: Omit<TieredMemoryOptions, "store">): TieredMemory;
  /**
   * A `DeclarativePolicyEngine` of `document` whose limits are {@link limits} and whose
   * approvals are runs of the queue `approvals` on {@link runs}.
   */
  policy(
    document: PolicyDocumentInit,
    options?: Omit<DeclarativePolicyOptions, "limits" | "approvals">,
  ): DeclarativePolicyEngine;
  /** Closes every part (each once; parts already closed by their users are fine). */
  close(): Promise<void>;
}

/** The parts a backend is made of. */
export interface BackendParts {
  readonly kind: string;
  readonly runs: RunStore;
  readonly memoryStore: MemoryStore;
  readonly registry: Registry;
  readonly limits: LimitStore;
  readonly sharedState: SharedStateStore;
  /** Run after the parts are closed (e.g. a shared client's quit). */
  readonly onClose?: () => Promise<void>;
}

/**
 * A {@link Backend} of `parts`: the queues, memory and policy engines it hands out are built on
 * them. For a backend of your own parts (e.g. Postgres runs beside Redis limits).
 *
 * @example
 * const backend = composeBackend({ kind: "custom", runs: myRunStore, memoryStore: new InMemoryMemoryStore(), registry: new InMemoryRegistry(), limits: new InMemoryLimitStore(), sharedState: new InMemorySharedStateStore() });
 */
export function composeBackend(parts: BackendParts): Backend {
  const queues = new Map<string, RunQueue>();
  let closing: Promise<void> | null = null;
  const backend: Backend = {
    kind: parts.kind,
    runs: parts.runs,
    memoryStore: parts.memoryStore,
    registry: parts.registry,
    limits: parts.limits,
    sharedState: parts.sharedState,
    queue(name, options = {}) {
      const known = queues.get(name);
      if (known !== undefined) return known;
      const queue = new RunQueue({ ...options, store: parts.runs, name });
      queues.set(name, queue);
      return queue;
    },
    memory(options = {}) {
      return new TieredMemory({ ...options, store: parts.memoryStore });
    },
    policy(document, options = {}) {
      return new DeclarativePolicyEngine(document, {
        ...options,
        limits: parts.limits,
        approvals: backend.queue("approvals"),
      });
    },
    close() {
      closing ??= (async () => {
        const closed = await Promise.allSettled([
          parts.runs.close(),
          parts.memoryStore.close(),
          parts.registry.close(),
          parts.limits.close(),
          parts.sharedState.close(),
        ]);
        await parts.onClose?.();
        const failed = closed.find((r) => r.status === "rejected");
        if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
      })();
      return closing;
    },
  };
  return backend;
}
