// What a client of an app may see of a run — a durable job's, a graph's, a paused request's —
// its record, its events and its errors without operator data (the enqueuer's wire context,
// leases and worker ids, error texts that are not written for users, a graph's snapshot).
import { errorPolicyOf } from "../errors.js";
import { GraphErrorCode } from "../graph/execute/failure.js";
import type { GraphRun } from "../graph/host/graph-run.js";
import { clientData, clientError } from "../responder/failure-text.js";
import {
  RunEventType,
  type RunError,
  type RunEvent,
  type RunPause,
  type RunRecord,
  type RunStatus,
} from "../runs/types.js";
import type { JsonValue } from "../types/agent.js";
import type { AgentStatus } from "../types/status.js";

/** A run's result as a client may see it (see `clientError`). */
export interface ClientRunResult {
  readonly status: AgentStatus;
  readonly handler: string;
  readonly output: string;
  readonly data: Readonly<Record<string, JsonValue>>;
  readonly error: string | null;
}

/** A run as a client may see it: {@link clientRun}. */
export interface ClientRun {
  readonly id: string;
  readonly status: RunStatus;
  readonly handlers: readonly string[];
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly result: ClientRunResult | null;
  readonly error: RunError | null;
  readonly pause: RunPause | null;
  readonly lastSeq: number;
  readonly createdAt: number;
  readonly startedAt: number | null;
  readonly finishedAt: number | null;
  readonly availableAt: number;
}

/** Codes with a fixed text: their messages may carry what an agent or a node threw. */
const FIXED_TEXT: Readonly<Record<string, string>> = {
  HANDLER_ERROR: "the agent failed",
  WRONG_HANDLER: "no handler accepted it",
  UNRECOVERABLE: "the agent failed",
  [GraphErrorCode.MAX_STEPS]: "the run used up its steps",
  [GraphErrorCode.MAX_VISITS]: "a node was visited too often",
  [GraphErrorCode.NODE_FAILED]: "a node failed",
  [GraphErrorCode.INVALID_STATE_UPDATE]: "a node's answer did not fit the state",
  [GraphErrorCode.INVALID_ROUTE]: "an edge chose a node that does not exist",
};

/**
 * A run's error as a client may see it: the code and message of a typed error a client may read
 * (`ERROR_POLICY[code].expose`), else a fixed text (`HANDLER_ERROR`, `WRONG_HANDLER`,
 * `UNRECOVERABLE` and a graph's own codes such as `NODE_FAILED` keep their code; any other code
 * becomes `INTERNAL`).
 *
 * @example
 * clientRunError({ code: "HANDLER_ERROR", message: "ECONNREFUSED /var/run/db.sock", retriable: true });
 * // { code: "HANDLER_ERROR", message: "the agent failed", retriable: true }
 */
export function clientRunError<E extends { readonly code: string; readonly message: string }>(
  error: E,
): E {
  if (errorPolicyOf(error.code)?.expose === true) return error;
  const text = FIXED_TEXT[error.code];
  if (text !== undefined) return { ...error, message: text };
  return { ...error, code: "INTERNAL", message: "the run failed" };
}

/**
 * What an app may send a client about a run (for `GET /runs/:id`). For a graph's run (a
 * `GraphRun`): the same run with its error as {@link clientRunError} shows it and its pause's
 * data without a worker's stderr; the signed `sessionState` is kept (drop it too when your
 * clients do not resume with it). For a run record: its id, status, attempts,
 * times, pause (the prompt is for the user), and its result and error as `clientError` and
 * {@link clientRunError} show them. Left out: the input, the enqueuer's wire context (identity,
 * permissions, scope, metadata), the lease and worker, fences, reclaims, trace id, idempotency
 * key and retry policy — operator data, which the record keeps for the server.
 *
 * @example
 * const run = await queue.get(id);
 * res.json(run === null ? null : clientRun(run));
 */
export function clientRun(run: GraphRun): GraphRun;
export function clientRun(run: RunRecord): ClientRun;
export function clientRun(run: RunRecord | GraphRun): ClientRun | GraphRun {
  if ("runId" in run) {
    return {
      ...run,
      pause: run.pause === null ? null : { ...run.pause, data: { ...clientData(run.pause.data) } },
      error: run.error === null ? null : clientRunError(run.error),
    };
  }
  const result = run.result;
  return {
    id: run.id,
    status: run.status,
    handlers: run.handlers,
    attempt: run.attempt,
    maxAttempts: run.maxAttempts,
    result:
      result === null
        ? null
        : {
            status: result.status,
            handler: result.handler,
            output: result.output,
            data: clientData(result.data),
            error: clientError(result),
          },
    error: run.error === null ? null : clientRunError(run.error),
    pause: run.pause,
    lastSeq: run.lastSeq,
    createdAt: run.createdAt,
    startedAt: run.startedAt,
    finishedAt: run.finishedAt,
    availableAt: run.availableAt,
  };
}

const NO_DATA: Readonly<Record<string, JsonValue>> = Object.freeze({});

/**
 * A run event as a client may see it (for an SSE route): the same `seq`, type and time, with the
 * data of the events that carry operator data reduced — `run.started`, `run.reclaimed` and
 * `run.released` lose their worker ids and fences; the errors of `run.retrying`, `run.failed`,
 * `run.timed_out`, `run.cancelled` and `node.failed` are shown as {@link clientRunError} shows
 * them; `tool.completed` loses its error text; `run.paused` loses a graph's snapshot and a
 * worker's stderr. Steps, nodes, output and custom events (`ctx.run.emit`) are kept as they are.
 *
 * @example
 * await writeSSE(res, queue.events(id, { afterSeq: lastEventSeq(req) }), null, {
 *   message: (e) => ({ id: e.seq, event: e.type, data: clientRunEvent(e) }),
 * });
 */
export function clientRunEvent(event: RunEvent): RunEvent {
  switch (event.type) {
    case RunEventType.STARTED:
    case RunEventType.RECLAIMED:
    case RunEventType.RELEASED:
      return { ...event, data: NO_DATA };
    case RunEventType.RETRYING:
    case RunEventType.FAILED:
    case RunEventType.TIMED_OUT:
    case RunEventType.CANCELLED: {
      const error = event.data.error;
      if (typeof error !== "object" || error === null || Array.isArray(error)) return event;
      const shown = clientRunError({
        code: String(error.code),
        message: String(error.message),
        retriable: error.retriable === true,
      });
      return { ...event, data: { ...event.data, error: { ...shown } } };
    }
    case RunEventType.NODE_FAILED: {
      const d = event.data;
      const shown = clientRunError({ code: String(d.code), message: String(d.error) });
      return { ...event, data: { ...d, code: shown.code, error: shown.message } };
    }
    case RunEventType.TOOL_COMPLETED: {
      const { error: _error, ...rest } = event.data;
      return { ...event, data: rest };
    }
    case RunEventType.PAUSED: {
      const inner = event.data.data;
      if (typeof inner !== "object" || inner === null || Array.isArray(inner)) return event;
      const { graph: _graph, ...shown } = clientData(inner);
      return { ...event, data: { ...event.data, data: shown } };
    }
    default:
      return event;
  }
}
