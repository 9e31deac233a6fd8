import { InMemoryMemoryStore } from "../memory/in-memory-store.js";
import { InMemoryLimitStore } from "../policy/in-memory-limit-store.js";
import { InMemoryRegistry } from "../registry/in-memory-registry.js";
import { InMemoryRunStore } from "../runs/memory/in-memory-store.js";
import { InMemorySharedStateStore } from "../graph/execute/shared-state-store.js";
import { composeBackend, type Backend } from "./backend.js";

/**
 * Every piece of state in this process's memory: runs, memory, the registry, rate limits and
 * budgets. Nothing to install or run, and nothing survives a restart; on several replicas each
 * one has its own (each grants the whole rate limit, sees only its own approvals and runs). The
 * embedded default of the example apps; move to `sqliteBackend` or `redisBackend` by changing
 * this one call.
 *
 * @example
 * const backend = embeddedBackend();
 * const policy = backend.policy({ version: 1, rateLimits: [{ name: "per-user", per: "user", limit: 60, windowSeconds: 60 }] });
 */
export function embeddedBackend(): Backend {
  return composeBackend({
    kind: "memory",
    runs: new InMemoryRunStore(),
    memoryStore: new InMemoryMemoryStore(),
    registry: new InMemoryRegistry(),
    limits: new InMemoryLimitStore(),
    sharedState: new InMemorySharedStateStore(),
  });
}
