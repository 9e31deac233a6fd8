import { RunEventType, type RunEvent, type RunRecord } from "../runs/types.js";
import type { JsonValue } from "../types/agent.js";
import { tokenUsageFromWire, type TokenUsage, type TokenUsageWire } from "../types/usage.js";
import type { GraphSnapshot } from "./node-context.js";
import { parseNodeKey } from "./run-events.js";
import type { SessionPayload, SessionState } from "./session-state.js";

/**
 * Where an execution is. `completed`, `failed`, `cancelled` and `timed_out` are final; a
 * `paused` one waits for `injectInput` (or a resume from its sessionState).
 *
 * @example
 * if (result.status === ExecutionStatus.PAUSED) console.log(result.pausedAt);
 */
export const ExecutionStatus = {
  PENDING: "pending",
  RUNNING: "running",
  PAUSED: "paused",
  COMPLETED: "completed",
  FAILED: "failed",
  CANCELLED: "cancelled",
  TIMED_OUT: "timed_out",
} as const;
export type ExecutionStatus = (typeof ExecutionStatus)[keyof typeof ExecutionStatus];

const FROM_RUN: Record<RunRecord["status"], ExecutionStatus> = {
  pending: ExecutionStatus.PENDING,
  running: ExecutionStatus.RUNNING,
  paused: ExecutionStatus.PAUSED,
  succeeded: ExecutionStatus.COMPLETED,
  failed: ExecutionStatus.FAILED,
  cancelled: ExecutionStatus.CANCELLED,
  timed_out: ExecutionStatus.TIMED_OUT,
};

/**
 * An execution as its caller sees it. The execution id is the run id: `queue.get(id)` and
 * `queue.events(id)` work on it.
 *
 * @example
 * const result: ExecutionResult = await runtime.triggerAndWait("default", { orderId: "42" }, ctx);
 * if (result.status === "paused") await runtime.injectInput(result.executionId, result.pausedAt!, "approved");
 */
export interface ExecutionResult {
  readonly executionId: string;
  readonly entryPoint: string;
  readonly status: ExecutionStatus;
  /** The state after the last committed node (the start state before any). */
  readonly state: Record<string, unknown>;
  /** The graph's `output(state)` once completed, else `null`. */
  readonly output: JsonValue;
  /** The node the execution waits at, when paused. */
  readonly pausedAt: string | null;
  /** What the paused node asks. */
  readonly request: { prompt: string | null; kind: string; data: Record<string, JsonValue> } | null;
  /** A signed, portable copy of a paused execution (see `triggerAndWait(..., { sessionState })`). */
  readonly sessionState: SessionState | null;
  /** The committed node visits in order, e.g. `["intake#1", "lookup#1", "review#1"]`. */
  readonly path: readonly string[];
  readonly usage: TokenUsage;
  readonly error: { readonly code: string; readonly message: string } | null;
}

const NO_USAGE: TokenUsageWire = {
  prompt_tokens: 0,
  completion_tokens: 0,
  total_tokens: 0,
  cost_usd: 0,
};

/** The snapshot a run's result or pause carries, if any. */
export function snapshotOf(run: RunRecord): GraphSnapshot | null {
  const raw = run.status === "paused" ? run.pause?.data.graph : run.result?.data.graph;
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return null;
  return raw as unknown as GraphSnapshot;
}

/** The start payload a run of a graph carries in its input message. */
export function startOf(run: RunRecord): { state: Record<string, unknown> } {
  try {
    const start = JSON.parse(run.input.message) as { state?: Record<string, unknown> };
    return { state: start.state ?? {} };
  } catch {
    return { state: {} };
  }
}

/**
 * The snapshot an answered execution paused with, from its last two events (`run.paused`, then
 * `run.resumed`), while it waits for a worker: its record no longer carries one.
 */
export function answeredSnapshot(run: RunRecord, last: readonly RunEvent[]): GraphSnapshot | null {
  if (run.status !== "pending" || run.pause !== null) return null;
  const [paused, resumed] = last;
  if (paused?.type !== RunEventType.PAUSED || resumed?.type !== RunEventType.RESUMED) return null;
  if (resumed.seq !== run.lastSeq) return null;
  const data = paused.data.data;
  const raw = typeof data === "object" && data !== null && !Array.isArray(data) ? data.graph : null;
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return null;
  return raw as unknown as GraphSnapshot;
}

/**
 * Builds the ExecutionResult of a run; `sign` makes the sessionState of a paused one. `known` is
 * the last snapshot when the record has none (an answered execution waiting for a worker), so its
 * state and path are not shown as the start input.
 */
export function toExecutionResult(
  run: RunRecord,
  sign: (payload: SessionPayload) => SessionState,
  known: GraphSnapshot | null = null,
): ExecutionResult {
  const snapshot = snapshotOf(run) ?? known;
  const status = FROM_RUN[run.status];
  const entryPoint = run.input.args.entryPoint ?? "default";
  const state = snapshot?.state ?? startOf(run).state;
  const paused = status === ExecutionStatus.PAUSED && run.pause !== null;
  const pausedAt = paused ? (parseNodeKey(run.pause?.key ?? "")?.nodeId ?? null) : null;
  const data: Record<string, JsonValue> = { ...(run.pause?.data ?? {}) };
  delete data.graph;
  let sessionState: SessionState | null = null;
  if (paused && pausedAt !== null && snapshot !== null) {
    sessionState = sign({
      v: 1,
      graph: run.handlers[0] ?? "",
      executionId: run.id,
      entryPoint,
      node: pausedAt,
      state: snapshot.state,
      visits: snapshot.visits,
      path: [...snapshot.path],
      steps: snapshot.steps,
      usage: snapshot.usage ?? NO_USAGE,
      issuedAt: Date.now(),
    });
  }
  const failed =
    status === ExecutionStatus.FAILED ||
    status === ExecutionStatus.CANCELLED ||
    status === ExecutionStatus.TIMED_OUT;
  const code = run.result?.data.code;
  return {
    executionId: run.id,
    entryPoint,
    status,
    state,
    output: status === ExecutionStatus.COMPLETED ? (run.result?.data.output ?? null) : null,
    pausedAt,
    request: paused
      ? { prompt: run.pause?.prompt ?? null, kind: run.pause?.kind ?? "approval", data }
      : null,
    sessionState,
    path: snapshot?.path ?? [],
    usage: tokenUsageFromWire(snapshot?.usage ?? NO_USAGE),
    error: failed
      ? {
          code: typeof code === "string" ? code : (run.error?.code ?? status.toUpperCase()),
          message:
            run.error?.message ?? run.result?.error ?? `Execution ${run.id} ended ${status}.`,
        }
      : null,
  };
}
