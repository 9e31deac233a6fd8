import { z } from "zod";
import { ExecContext } from "../context/exec-context.js";
import type { AgentHandler, AgentRuntime } from "../runtime/types.js";
import { HandlerNameSchema } from "../runtime/options.js";
import { RUN_STATUSES } from "./types.js";
import { DEFAULT_MAX_STEP_BYTES } from "./json-value.js";
import type { RunStore } from "./store.js";
import { isTraceSink, type TraceSink } from "../tracing/sink.js";

const seconds = z.number().nonnegative().finite();
const positiveSeconds = z.number().positive().finite();

/** A queue name: it is also a key part in the stores. */
export const QueueNameSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, "must be 1-64 letters, digits, '_', '.' or '-'");

export const RetryOptionsSchema = z
  .object({
    maxAttempts: z.number().int().min(1).max(1000).default(3),
    initialDelaySeconds: seconds.default(1),
    backoffFactor: z.number().min(1).max(100).default(2),
    maxDelaySeconds: seconds.default(300),
    jitter: z.number().min(0).max(1).default(0.2),
  })
  .strict();
/** Retry policy of a run; the delay formula is in {@link retryDelaySeconds}. */
export type RetryOptions = z.input<typeof RetryOptionsSchema>;

const isStore = (v: unknown): v is RunStore =>
  typeof v === "object" &&
  v !== null &&
  ["create", "claim", "finish", "readEvents", "waitForEvents"].every(
    (m) => typeof (v as Record<string, unknown>)[m] === "function",
  );

export const RunQueueOptionsSchema = z
  .object({
    store: z.custom<RunStore>(isStore, "must be a RunStore (e.g. new InMemoryRunStore())"),
    name: QueueNameSchema.default("default"),
    /** Largest step value, checkpoint, resume value or input, as JSON. */
    maxStepBytes: z
      .number()
      .int()
      .min(1)
      .max(64 * 1024 * 1024)
      .default(DEFAULT_MAX_STEP_BYTES),
    /** Defaults of every run's retry policy (each enqueue may override fields). */
    retry: RetryOptionsSchema.partial().default({}),
    /** How often a run may lose its worker before it fails. */
    maxReclaims: z.number().int().min(0).max(1000).default(5),
  })
  .strict();
/** Options of {@link RunQueue}. */
export type RunQueueOptions = z.input<typeof RunQueueOptionsSchema>;

export const EnqueueOptionsSchema = z
  .object({
    handler: HandlerNameSchema.optional(),
    handlers: z.array(HandlerNameSchema).min(1).max(100).optional(),
    input: z.unknown(),
    /** The enqueuer's context (identity, permissions, trace); by default one of no user. */
    ctx: z
      .custom<ExecContext>((v) => v instanceof ExecContext, "must be an ExecContext")
      .optional(),
    idempotencyKey: z.string().min(1).max(256).optional(),
    priority: z.number().int().min(0).max(2_097_151).default(0),
    delaySeconds: seconds.default(0),
    timeoutSeconds: positiveSeconds.optional(),
    retry: RetryOptionsSchema.partial().optional(),
    maxReclaims: z.number().int().min(0).max(1000).optional(),
  })
  .strict()
  .refine((o) => (o.handler === undefined) !== (o.handlers === undefined), {
    message: "give exactly one of handler (a name) or handlers (a chain)",
    path: ["handler"],
  });
/** What {@link RunQueue.enqueue} takes. */
export type EnqueueOptions = z.input<typeof EnqueueOptionsSchema>;

export const ListOptionsSchema = z
  .object({
    status: z.enum(RUN_STATUSES).optional(),
    handler: z.string().min(1).optional(),
    userId: z.string().min(1).optional(),
    limit: z.number().int().min(1).max(1000).default(100),
    cursor: z.string().min(1).nullable().optional(),
  })
  .strict();
/** Filter and page of {@link RunQueue.list}. */
export type ListOptions = z.input<typeof ListOptionsSchema>;

export const WaitOptionsSchema = z
  .object({
    timeoutSeconds: positiveSeconds.optional(),
    /** Statuses to wait for; the final ones by default. */
    until: z.array(z.enum(RUN_STATUSES)).min(1).optional(),
    signal: z.custom<AbortSignal>((v) => v instanceof AbortSignal).optional(),
  })
  .strict();
/** Options of {@link RunQueue.wait}. */
export type WaitOptions = z.input<typeof WaitOptionsSchema>;

export const EventsOptionsSchema = z
  .object({
    afterSeq: z.number().int().min(0).default(0),
    /** `false`: end at the last event written when asked, instead of following live ones. */
    follow: z.boolean().default(true),
    signal: z
      .custom<AbortSignal>((v) => v instanceof AbortSignal, "must be an AbortSignal")
      .optional(),
  })
  .strict();
/** Options of {@link RunQueue.events}. */
export type EventsOptions = z.input<typeof EventsOptionsSchema>;

const runnerOwnShape = {
  concurrency: z.number().int().min(1).max(1000).default(1),
  leaseSeconds: positiveSeconds.default(30),
  heartbeatSeconds: positiveSeconds.default(10),
  workerId: z.string().min(1).max(200).optional(),
  /** How long one claim call waits for work before looking again (bounded by heartbeatSeconds). */
  idleWaitSeconds: positiveSeconds.optional(),
  /**
   * Where the spans and events of the runs this worker executes go. Each run joins the
   * enqueuer's trace, under its `runs.enqueue` span (persisted with the run).
   */
  traceSink: z
    .custom<TraceSink>(isTraceSink, "must be a TraceSink (an object with onSpanEnd)")
    .nullable()
    .optional(),
};

const heartbeatBelowLease = (o: { heartbeatSeconds: number; leaseSeconds: number }) =>
  o.heartbeatSeconds < o.leaseSeconds;
const HEARTBEAT_BELOW_LEASE = {
  message: "must be less than leaseSeconds, so a live worker renews its lease before it expires",
  path: ["heartbeatSeconds"],
};

/**
 * A Runner's own options, without the queue and runtime it works on: what a host that builds
 * its runners (GraphHost) takes, with the Runner's names and defaults.
 */
export const RunnerOwnOptionsSchema = z
  .object(runnerOwnShape)
  .strict()
  .refine(heartbeatBelowLease, HEARTBEAT_BELOW_LEASE);
/** Options of a {@link Runner} other than `queue` and `runtime`. */
export type RunnerOwnOptions = z.input<typeof RunnerOwnOptionsSchema>;

export const RunnerOptionsSchema = z
  .object({
    /** The queue whose runs it executes; by default its own, on an in-memory store. */
    queue: z
      .custom<object>((v) => typeof v === "object" && v !== null, "must be a RunQueue")
      .optional(),
    /** What executes the runs' handlers (in-process, subprocess, container)… */
    runtime: z
      .custom<AgentRuntime>(
        (v) =>
          typeof v === "object" &&
          v !== null &&
          typeof (v as AgentRuntime).invoke === "function" &&
          typeof (v as AgentRuntime).handlerNames === "function",
        "must be an AgentRuntime",
      )
      .optional(),
    /** …or the handlers themselves, by name, run in-process. */
    handlers: z
      .record(
        z.string().min(1),
        z.custom<AgentHandler>((v) => typeof v === "function", "must be a handler function"),
      )
      .optional(),
    ...runnerOwnShape,
  })
  .strict()
  .refine(heartbeatBelowLease, HEARTBEAT_BELOW_LEASE)
  .refine((o) => (o.runtime === undefined) !== (o.handlers === undefined), {
    message: "give exactly one of runtime (an AgentRuntime) or handlers ({ name: handler })",
    path: ["runtime"],
  });
/** Options of {@link Runner}. */
export type RunnerOptions = z.input<typeof RunnerOptionsSchema>;
