// Public entry of @nerva/core/runs: durable runs — the queue, the runner, the RunStore interface
// and the in-memory store, a run's context, options and their schemas. SqliteRunStore and
// RedisRunStore are at @nerva/core/sqlite and @nerva/core/redis.
export {
  FINAL_EVENT_TYPES,
  RunEventType,
  RunStatus,
  isFinalStatus,
  type RetryPolicy,
  type RunError,
  type RunEvent,
  type RunInput,
  type RunLease,
  type RunPage,
  type RunPause,
  type RunRecord,
} from "./types.js";
export type {
  ClaimRequest,
  ClaimedRun,
  LeaseRef,
  NewRun,
  RunListQuery,
  RunOutcome,
  RunStore,
} from "./store.js";
export { RunQueue } from "./run-queue.js";
export { Runner } from "./runner.js";
export { InMemoryRunStore } from "./memory/in-memory-store.js";
export { RunPaused, type RunContext, type WaitForInputOptions } from "./run-context.js";
export { retryDelaySeconds } from "./backoff.js";
export {
  EnqueueOptionsSchema,
  RetryOptionsSchema,
  RunQueueOptionsSchema,
  RunnerOptionsSchema,
  type EnqueueOptions,
  type EventsOptions,
  type ListOptions,
  type RetryOptions,
  type RunQueueOptions,
  type RunnerOptions,
  type WaitOptions,
} from "./options.js";
