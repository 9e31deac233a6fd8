import type { AgentResult, JsonValue } from "../types/agent.js";
import type { RunAnswerers } from "../context/run-slot.js";
import type { ExecContextWire } from "../types/context-wire.js";

/**
 * Where a durable run is in its life. `succeeded`, `failed`, `timed_out` and `cancelled` are
 * final; a `paused` run waits for `queue.resume(...)`.
 *
 * @example
 * const dead = await queue.list({ status: RunStatus.FAILED });
 */
export const RunStatus = {
  PENDING: "pending",
  RUNNING: "running",
  PAUSED: "paused",
  SUCCEEDED: "succeeded",
  FAILED: "failed",
  TIMED_OUT: "timed_out",
  CANCELLED: "cancelled",
} as const;
export type RunStatus = (typeof RunStatus)[keyof typeof RunStatus];
export const RUN_STATUSES = Object.values(RunStatus) as [RunStatus, ...RunStatus[]];

const FINAL: ReadonlySet<string> = new Set<RunStatus>([
  RunStatus.SUCCEEDED,
  RunStatus.FAILED,
  RunStatus.TIMED_OUT,
  RunStatus.CANCELLED,
]);

/**
 * True for the statuses a run never leaves on its own (`redrive` aside).
 *
 * @example
 * if (isFinalStatus(run.status)) console.log(run.result);
 */
export function isFinalStatus(status: string): boolean {
  return FINAL.has(status);
}

/**
 * The event types of every run: a durable job's, a graph's, a paused request's. `run.`, `step.`,
 * `node.`, `tool.` and `output.` are reserved: `ctx.run.emit` takes any other type. A graph's
 * node visits are steps, read as `node.started` / `node.completed` (`data.node`, `data.visit`).
 *
 * @example
 * for await (const e of queue.events(id)) if (e.type === RunEventType.OUTPUT_DELTA) write(e.data.chunk);
 */
export const RunEventType = {
  ENQUEUED: "run.enqueued",
  STARTED: "run.started",
  RECLAIMED: "run.reclaimed",
  RELEASED: "run.released",
  STEP_STARTED: "step.started",
  STEP_COMPLETED: "step.completed",
  CHECKPOINT: "run.checkpoint",
  PAUSED: "run.paused",
  RESUMED: "run.resumed",
  RETRYING: "run.retrying",
  CANCEL_REQUESTED: "run.cancel_requested",
  CANCELLED: "run.cancelled",
  SUCCEEDED: "run.succeeded",
  FAILED: "run.failed",
  TIMED_OUT: "run.timed_out",
  REDRIVEN: "run.redriven",
  OUTPUT_DELTA: "output.delta",
  /** A graph node began a visit: `data.node`, `data.visit`, `data.key` (`review#2`). */
  NODE_STARTED: "node.started",
  /** A node visit was committed with the state after it: once per visit. */
  NODE_COMPLETED: "node.completed",
  /** A node failed: `data.node`, `data.code`, `data.error`, `data.retriable`. */
  NODE_FAILED: "node.failed",
  /** A node called a tool: `data.node`, `data.tool`. */
  TOOL_STARTED: "tool.started",
  /** The tool answered: `data.status`, `data.durationMs`, `data.error`. */
  TOOL_COMPLETED: "tool.completed",
} as const;
export type RunEventType = (typeof RunEventType)[keyof typeof RunEventType];

/** Event types that end a run's history (until a `redrive`). */
export const FINAL_EVENT_TYPES: ReadonlySet<string> = new Set<string>([
  RunEventType.SUCCEEDED,
  RunEventType.FAILED,
  RunEventType.TIMED_OUT,
  RunEventType.CANCELLED,
]);

/** Prefixes a custom event type may not start with. */
export const RESERVED_EVENT_PREFIXES = ["run.", "step.", "node.", "tool.", "output."] as const;

/** Why a run failed (or why its last attempt did). */
export interface RunError {
  /** An ErrorCode, or `HANDLER_ERROR` / `HANDLER_TIMEOUT` for a failing agent result. */
  readonly code: string;
  readonly message: string;
  /** False when retrying cannot help (bad input, permissions, unknown handler, `retriable: false`). */
  readonly retriable: boolean;
}

/** What a paused run waits for. */
export interface RunPause {
  /** The key `resume(id, value, { key })` answers. */
  readonly key: string;
  readonly prompt: string | null;
  /** What is asked, e.g. `approval`, `needs_data`, `needs_credentials`. */
  readonly kind: string;
  readonly data: Readonly<Record<string, JsonValue>>;
  /** Who may answer it (see `waitForInput`'s `answeredBy`); absent: anyone with the store. */
  readonly answeredBy?: RunAnswerers;
}

/** Who holds a running run, with which fence, until when (epoch ms). */
export interface RunLease {
  readonly workerId: string;
  readonly fence: number;
  readonly expiresAt: number;
}

/** The retry policy of a run, every field filled. */
export interface RetryPolicy {
  readonly maxAttempts: number;
  readonly initialDelaySeconds: number;
  readonly backoffFactor: number;
  readonly maxDelaySeconds: number;
  /** 0..1: each delay is shortened by up to this fraction, at random. */
  readonly jitter: number;
}

/**
 * A durable run as the store keeps it. Timestamps are epoch milliseconds.
 *
 * @example
 * const run: RunRecord | null = await queue.get(id);
 * if (run?.status === "paused") console.log(run.pause?.prompt);
 */
export interface RunRecord {
  readonly id: string;
  readonly queue: string;
  /** One handler, or the handlers of a chain in order. */
  readonly handlers: readonly string[];
  /** The AgentInput, in its wire form. */
  readonly input: RunInput;
  readonly status: RunStatus;
  /** 1-based number of the current (or last) attempt. Reclaims and releases do not count. */
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly retry: RetryPolicy;
  /** The last AgentResult of the run (its output when it succeeded). */
  readonly result: AgentResult | null;
  readonly error: RunError | null;
  readonly pause: RunPause | null;
  readonly lease: RunLease | null;
  /** The last fence issued (0 before the first claim); every claim increments it. */
  readonly fence: number;
  /** True once `cancel` was asked while the run was running. */
  readonly cancelRequested: boolean;
  readonly userId: string | null;
  readonly traceId: string;
  readonly idempotencyKey: string | null;
  /** Lower runs first; 0 (the default) is the most urgent. */
  readonly priority: number;
  /** Deadline of each attempt, or `null` for the runtime's own handler timeouts only. */
  readonly timeoutSeconds: number | null;
  /** How often the run's worker was lost and the run taken over. */
  readonly reclaims: number;
  readonly maxReclaims: number;
  /** The seq of the run's last event. */
  readonly lastSeq: number;
  /** The enqueuer's context in its wire form (identity, permissions, trace, metadata). */
  readonly context: ExecContextWire;
  readonly createdAt: number;
  readonly startedAt: number | null;
  readonly finishedAt: number | null;
  /** When the run may next be claimed (delay, retry backoff). */
  readonly availableAt: number;
}

/** An AgentInput in its wire form. */
export interface RunInput {
  readonly message: string;
  readonly args: Readonly<Record<string, string>>;
  readonly tools: readonly Readonly<Record<string, string>>[];
  readonly history: readonly Readonly<Record<string, string>>[];
}

/**
 * One entry of a run's history. `seq` is 1, 2, 3… per run, without gaps, written in the same
 * transaction as the transition it records.
 *
 * @example
 * for await (const e of queue.events(id, { afterSeq: 0 })) console.log(e.seq, e.type, e.data);
 */
export interface RunEvent {
  readonly runId: string;
  readonly seq: number;
  readonly type: string;
  /** Epoch milliseconds. */
  readonly at: number;
  readonly attempt: number;
  readonly data: Readonly<Record<string, JsonValue>>;
}

/** One page of {@link RunRecord}s, newest first. */
export interface RunPage {
  readonly runs: readonly RunRecord[];
  /** Pass as `cursor` for the next page; `null` on the last one. */
  readonly nextCursor: string | null;
}
