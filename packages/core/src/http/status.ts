import { STATUS_CODES } from "node:http";
import { ERROR_POLICY, ErrorCode, NervaError, type ValidationIssue } from "../errors.js";
import type { AgentResult } from "../types/agent.js";
import { AgentStatus } from "../types/status.js";
import { HttpErrorCode, requestErrorOf } from "./request-errors.js";

/**
 * HTTP status of each {@link AgentStatus}, for routes that answer with an AgentResult. An agent
 * failure is a value, so the HTTP layer worked: `error` is 502 (the agent, an upstream of the
 * HTTP layer, failed; 500 stays for bugs in the server), `timeout` is 504. Outcomes that ask
 * the client for something (`needs_data`, `needs_credentials`) are 200 with the status in the
 * body; `wrong_handler` (no agent could take the request) is 422.
 *
 * @example
 * res.status(httpStatusOfResult(result)).json(result);
 */
export const HTTP_STATUS_BY_AGENT_STATUS: Readonly<Record<AgentStatus, number>> = Object.freeze({
  [AgentStatus.SUCCESS]: 200,
  [AgentStatus.NEEDS_DATA]: 200,
  [AgentStatus.NEEDS_CREDENTIALS]: 200,
  [AgentStatus.WRONG_HANDLER]: 422,
  [AgentStatus.ERROR]: 502,
  [AgentStatus.TIMEOUT]: 504,
});

/**
 * The HTTP status for an AgentResult (see {@link HTTP_STATUS_BY_AGENT_STATUS}).
 *
 * @example
 * httpStatusOfResult({ status: "timeout" }); // 504
 */
export function httpStatusOfResult(result: Pick<AgentResult, "status">): number {
  return HTTP_STATUS_BY_AGENT_STATUS[result.status] ?? 500;
}

/** The 4xx/5xx status an error carries itself (`status`, `statusCode` or Nest's `getStatus()`). */
function ownStatus(err: unknown): number | undefined {
  if (typeof err !== "object" || err === null) return undefined;
  const e = err as { status?: unknown; statusCode?: unknown; getStatus?: unknown };
  const value =
    typeof e.getStatus === "function"
      ? (e.getStatus as () => unknown)()
      : (e.status ?? e.statusCode);
  return typeof value === "number" && Number.isInteger(value) && value >= 400 && value <= 599
    ? value
    : undefined;
}

/**
 * The HTTP status for anything thrown: a NervaError by its code (`ERROR_POLICY[code].status`,
 * see {@link ERROR_POLICY}), another error by its own `status`/`statusCode` when it is a
 * 4xx/5xx, otherwise 500.
 *
 * @example
 * httpStatusOf(new NervaError(ErrorCode.TIMEOUT, "too slow")); // 504
 */
export function httpStatusOf(err: unknown): number {
  if (err instanceof NervaError) return ERROR_POLICY[err.code]?.status ?? 500;
  return ownStatus(err) ?? 500;
}

/**
 * The JSON body of an error answer.
 *
 * @example
 * const body: HttpErrorBody = toHttpError(err, requestId).body;
 */
export interface HttpErrorBody {
  readonly error: {
    readonly code: string;
    readonly message: string;
    readonly requestId: string | null;
    /** Validation problems (400). */
    readonly issues?: readonly ValidationIssue[];
    /** Machine-readable extras of a NervaError (not sent with a 5xx other than 503/504). */
    readonly details?: Readonly<Record<string, unknown>>;
  };
}

/**
 * Everything a bridge needs to answer an error.
 *
 * @example
 * const { status, headers, body } = toHttpError(err, requestId);
 */
export interface HttpErrorResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: HttpErrorBody;
}

function retryAfterSeconds(details: Readonly<Record<string, unknown>>): number | undefined {
  const seconds = details.retryAfterSeconds;
  if (typeof seconds === "number" && Number.isFinite(seconds)) {
    return Math.max(0, Math.ceil(seconds));
  }
  return undefined;
}

/**
 * Turns anything thrown into the status, headers and JSON body the bridges send. A NervaError's
 * message, issues and details are sent only when its code's policy exposes them
 * (`ERROR_POLICY[code].expose`); another error's message only with a 4xx. Otherwise (it may carry
 * internals) the client gets a generic text and the request id.
 *
 * @example
 * const { status, headers, body } = toHttpError(err, ctx.requestId);
 * res.writeHead(status, { ...headers, "content-type": "application/json" }).end(JSON.stringify(body));
 */
export function toHttpError(thrown: unknown, requestId: string | null = null): HttpErrorResponse {
  // A framework's body errors (malformed JSON, too large, wrong type) get fixed messages first.
  const err = requestErrorOf(thrown);
  const status = httpStatusOf(err);
  const headers: Record<string, string> = {};
  if (err instanceof NervaError) {
    // A code from another installed copy of this package that this one does not know is not shown.
    const exposed = ERROR_POLICY[err.code]?.expose === true;
    if (status === 429 || status === 503) {
      const after = retryAfterSeconds(err.details);
      if (after !== undefined) headers["retry-after"] = String(after);
    }
    if (status === 401) {
      const scheme = err.details.wwwAuthenticate;
      headers["www-authenticate"] = typeof scheme === "string" ? scheme : "Bearer";
    }
    return {
      status,
      headers,
      body: {
        error: {
          code: exposed ? err.code : ErrorCode.INTERNAL,
          message: exposed ? err.message : internalMessage(requestId),
          requestId,
          ...(exposed && err.issues.length > 0 ? { issues: err.issues } : {}),
          ...(exposed && Object.keys(err.details).length > 0 ? { details: err.details } : {}),
        },
      },
    };
  }
  // A 401 always says how to authenticate (RFC 9110), whoever raised it.
  if (status === 401) headers["www-authenticate"] = "Bearer";
  const e = err as { message?: unknown; expose?: unknown; code?: unknown } | null;
  const showMessage =
    status < 500 && typeof e?.message === "string" && e.message !== "" && e.expose !== false;
  return {
    status,
    headers,
    body: {
      error: {
        code: status >= 500 ? ErrorCode.INTERNAL : clientErrorCode(status, e?.code),
        message: showMessage
          ? (e?.message as string)
          : status >= 500
            ? internalMessage(requestId)
            : (STATUS_CODES[status] ?? "Error"),
        requestId,
      },
    },
  };
}

/** Codes of 4xx answers to errors that are not NervaErrors and carry no code of their own. */
const CODE_BY_STATUS: Readonly<Record<number, string>> = {
  400: ErrorCode.INVALID_INPUT,
  401: ErrorCode.UNAUTHENTICATED,
  403: ErrorCode.PERMISSION_DENIED,
  404: ErrorCode.NOT_FOUND,
  413: HttpErrorCode.PAYLOAD_TOO_LARGE,
  415: HttpErrorCode.UNSUPPORTED_MEDIA_TYPE,
  429: ErrorCode.RATE_LIMITED,
};

/** The error's own code when it is one (`UPPER_SNAKE`), else the status's, else `HTTP_<status>`. */
function clientErrorCode(status: number, own: unknown): string {
  if (typeof own === "string" && /^[A-Z][A-Z0-9_]{0,63}$/.test(own)) return own;
  return CODE_BY_STATUS[status] ?? `HTTP_${status}`;
}

function internalMessage(requestId: string | null): string {
  return `Internal server error${requestId === null ? "" : ` (request ${requestId})`}.`;
}
