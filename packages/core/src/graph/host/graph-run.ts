import {
  RunEventType,
  RunStatus,
  type RunEvent,
  type RunPause,
  type RunRecord,
} from "../../runs/types.js";
import type { JsonValue } from "../../types/agent.js";
import { tokenUsageFromWire, type TokenUsage, type TokenUsageWire } from "../../types/usage.js";
import type { GraphSnapshot } from "../execute/node-context.js";
import { parseNodeKey } from "../execute/run-events.js";
import type { SessionPayload, SessionState } from "./session-state.js";

/**
 * A run of a graph as its caller sees it: the run's id and status, with the graph's state, path
 * and output. `queue.get(runId)` and `queue.events(runId)` work on the same id.
 *
 * @example
 * const run: GraphRun = await host.triggerAndWait("default", { orderId: "42" }, ctx);
 * if (run.status === "paused") await host.resume(run.runId, "approved");
 */
export interface GraphRun {
  readonly runId: string;
  readonly entryPoint: string;
  readonly status: RunStatus;
  /** The state after the last committed node (the start state before any). */
  readonly state: Record<string, unknown>;
  /** The graph's `output(state)` once succeeded, else `null`. */
  readonly output: JsonValue;
  /** The node the run waits at, when paused. */
  readonly pausedAt: string | null;
  /** What the run waits for, when paused (its `data` without the graph's own snapshot). */
  readonly pause: RunPause | null;
  /** A signed, portable copy of a paused run (see `triggerAndWait(..., { sessionState })`). */
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
 * The snapshot an answered run paused with, from its last two events (`run.paused`, then
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
 * Builds the GraphRun of a run; `sign` makes the sessionState of a paused one. `known` is
 * the last snapshot when the record has none (an answered run waiting for a worker), so its
 * state and path are not shown as the start input.
 */
export function toGraphRun(
  run: RunRecord,
  sign: (payload: SessionPayload) => SessionState,
  known: GraphSnapshot | null = null,
): GraphRun {
  const snapshot = snapshotOf(run) ?? known;
  const status = run.status;
  const entryPoint = run.input.args.entryPoint ?? "default";
  const state = snapshot?.state ?? startOf(run).state;
  const paused = status === RunStatus.PAUSED && run.pause !== null;
  const pausedAt = paused ? (parseNodeKey(run.pause?.key ?? "")?.nodeId ?? null) : null;
  const data: Record<string, JsonValue> = { ...(run.pause?.data ?? {}) };
  delete data.graph;
  let sessionState: SessionState | null = null;
  if (paused && pausedAt !== null && snapshot !== null) {
    sessionState = sign({
      v: 1,
      graph: run.handlers[0] ?? "",
      runId: run.id,
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
    status === RunStatus.FAILED || status === RunStatus.CANCELLED || status === RunStatus.TIMED_OUT;
  const code = run.result?.data.code;
  return {
    runId: run.id,
    entryPoint,
    status,
    state,
    output: status === RunStatus.SUCCEEDED ? (run.result?.data.output ?? null) : null,
    pausedAt,
    pause: paused && run.pause !== null ? { ...run.pause, data } : null,
    sessionState,
    path: snapshot?.path ?? [],
    usage: tokenUsageFromWire(snapshot?.usage ?? NO_USAGE),
    error: failed
      ? {
          code: typeof code === "string" ? code : (run.error?.code ?? status.toUpperCase()),
          message: run.error?.message ?? run.result?.error ?? `Run ${run.id} ended ${status}.`,
        }
      : null,
  };
}
