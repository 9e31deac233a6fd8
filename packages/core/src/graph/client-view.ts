// What a client of an app may see of a graph execution: the ExecutionResult and the typed events
// without operator data (error texts a node threw, tool errors, worker ids, the pause's snapshot).
import { clientData } from "../responder/failure-text.js";
import { clientRunError } from "../runs/client-view.js";
import type { JsonValue } from "../types/agent.js";
import { EventType, type GraphEvent } from "./events.js";
import type { ExecutionResult } from "./execution-result.js";
import { GraphErrorCode } from "./failure.js";

/** Fixed texts for the graph's own codes: their messages may carry what a node threw. */
const GRAPH_TEXT: Readonly<Record<string, string>> = {
  [GraphErrorCode.MAX_STEPS]: "the execution used up its steps",
  [GraphErrorCode.MAX_VISITS]: "a node was visited too often",
  [GraphErrorCode.NODE_FAILED]: "a node failed",
  [GraphErrorCode.INVALID_STATE_UPDATE]: "a node's answer did not fit the state",
  [GraphErrorCode.INVALID_ROUTE]: "an edge chose a node that does not exist",
};

/**
 * An execution's error as a client may see it: the graph's own codes with a fixed text, a typed
 * error a client may read (4xx, 503, 504) as it is, anything else as `clientRunError` shows it.
 *
 * @example
 * clientExecutionError({ code: "NODE_FAILED", message: 'Node "lookup" failed: ECONNREFUSED /run/db.sock' });
 * // { code: "NODE_FAILED", message: "a node failed" }
 */
export function clientExecutionError(error: { readonly code: string; readonly message: string }): {
  readonly code: string;
  readonly message: string;
} {
  const text = GRAPH_TEXT[error.code];
  if (text !== undefined) return { code: error.code, message: text };
  const { code, message } = clientRunError({ ...error, retriable: false });
  return { code, message };
}

/**
 * What an app may send a client about an execution (`GET /executions/:id`, the answer of an input
 * route): the result with its error as {@link clientExecutionError} shows it and the question's
 * data without a worker's stderr. The signed `sessionState` is kept: drop it too when your
 * clients do not resume with it.
 *
 * @example
 * const execution = await runtime.getExecution(id);
 * res.json(execution === null ? null : clientExecution(execution));
 */
export function clientExecution(result: ExecutionResult): ExecutionResult {
  return {
    ...result,
    request:
      result.request === null
        ? null
        : { ...result.request, data: { ...clientData(result.request.data) } },
    error: result.error === null ? null : clientExecutionError(result.error),
  };
}

const NO_DATA: Readonly<Record<string, JsonValue>> = Object.freeze({});

function shownError(value: JsonValue | undefined): JsonValue {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  return { ...clientExecutionError({ code: String(value.code), message: String(value.message) }) };
}

/**
 * A graph event as a client may see it (for an SSE route): the same type, `seq` and time, with
 * operator data reduced — EXECUTION_STARTED loses its worker id and fence; NODE_FAILED,
 * EXECUTION_RETRYING, EXECUTION_FAILED and EXECUTION_CANCELLED show their errors as
 * {@link clientExecutionError} does; TOOL_CALL_COMPLETED keeps the tool's status but not its
 * error text; EXECUTION_PAUSED loses the execution's snapshot. The rest is kept as it is.
 *
 * @example
 * await writeSSE(res, runtime.events(id, { afterSeq: lastEventSeq(req) }), null, {
 *   message: (e) => ({ id: e.seq, event: e.type, data: clientGraphEvent(e) }),
 * });
 */
export function clientGraphEvent(event: GraphEvent): GraphEvent {
  const d = event.data;
  switch (event.type) {
    case EventType.EXECUTION_STARTED:
      return { ...event, data: NO_DATA };
    case EventType.NODE_FAILED: {
      const shown = clientExecutionError({ code: String(d.code), message: String(d.error) });
      return { ...event, data: { ...d, code: shown.code, error: shown.message } };
    }
    case EventType.EXECUTION_RETRYING:
    case EventType.EXECUTION_FAILED:
    case EventType.EXECUTION_CANCELLED:
      return d.error === undefined
        ? event
        : { ...event, data: { ...d, error: shownError(d.error) } };
    case EventType.TOOL_CALL_COMPLETED: {
      const { error: _error, ...rest } = d;
      return { ...event, data: rest };
    }
    case EventType.EXECUTION_PAUSED: {
      const inner = d.data;
      if (typeof inner !== "object" || inner === null || Array.isArray(inner)) return event;
      const { graph: _graph, ...shown } = clientData(inner);
      return { ...event, data: { ...d, data: shown } };
    }
    default:
      return event;
  }
}
