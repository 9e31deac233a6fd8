// What a client of an app may see of a run: the record and events without operator data (the
// enqueuer's wire context, leases and worker ids, error texts that are not written for users).
import { isClientErrorCode } from "../http/status.js";
import { clientData, clientError } from "../responder/failure-text.js";
import type { AgentStatus } from "../types/status.js";
import type { JsonValue } from "../types/agent.js";
import {
  RunEventType,
  type RunError,
  type RunEvent,
  type RunPause,
  type RunRecord,
  type RunStatus,
} from "./types.js";

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

/** Codes a failing agent's result gets in a run: enumerations, safe to show with a fixed text. */
const AGENT_CODES: ReadonlySet<string> = new Set(["HANDLER_ERROR", "WRONG_HANDLER"]);

/**
 * A run's error as a client may see it: the code and message of a typed error a client may read
 * (`isClientErrorCode`: answered 4xx, 503 or 504), else a fixed text (`HANDLER_ERROR` and
 * `WRONG_HANDLER` keep their code; any other code becomes `INTERNAL`).
 *
 * @example
 * clientRunError({ code: "HANDLER_ERROR", message: "ECONNREFUSED /var/run/db.sock", retriable: true });
 * // { code: "HANDLER_ERROR", message: "the agent failed", retriable: true }
 */
export function clientRunError(error: RunError): RunError {
  if (isClientErrorCode(error.code)) return error;
  if (AGENT_CODES.has(error.code)) {
    return {
      code: error.code,
      message: error.code === "WRONG_HANDLER" ? "no handler accepted it" : "the agent failed",
      retriable: error.retriable,
    };
  }
  return { code: "INTERNAL", message: "the run failed", retriable: error.retriable };
}

/**
 * What an app may send a client about a run (for `GET /runs/:id`): its id, status, attempts,
 * times, pause (the prompt is for the user), and its result and error as `clientError` and
 * {@link clientRunError} show them. Left out: the input, the enqueuer's wire context (identity,
 * permissions, scope, metadata), the lease and worker, fences, reclaims, trace id, idempotency
 * key and retry policy — operator data, which the record keeps for the server.
 *
 * @example
 * const run = await queue.get(id);
 * res.json(run === null ? null : clientRun(run));
 */
export function clientRun(run: RunRecord): ClientRun {
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
 * data of the lifecycle events that carry operator data reduced — `run.started`, `run.reclaimed`
 * and `run.released` lose their worker ids and fences, the errors of `run.retrying`,
 * `run.failed`, `run.timed_out` and `run.cancelled` are shown as {@link clientRunError} shows
 * them. Steps, output, pauses and custom events (`ctx.run.emit`) are kept as they are.
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
    default:
      return event;
  }
}
