import { STATUS_CODES } from "node:http";
import { ErrorCode, NervaError, type ValidationIssue } from "../errors.js";
import type { AgentResult } from "../types/agent.js";
import { AgentStatus } from "../types/status.js";
import { HttpErrorCode, requestErrorOf } from "./request-errors.js";

/**
 * HTTP status of each {@link ErrorCode}: every code has one (a new code without a status does not
 * compile). Errors that are not NervaErrors and carry no status of their own answer 500.
 *
 * | code | status |
 * |---|---|
 * | INVALID_INPUT, INVALID_OPTIONS | 400 (body lists the validation issues) |
 * | UNAUTHENTICATED | 401 (`WWW-Authenticate: Bearer`) |
 * | PERMISSION_DENIED, POLICY_DENIED | 403 |
 * | NOT_FOUND | 404 |
 * | INVALID_STATE | 409 |
 * | RATE_LIMITED, BUDGET_EXCEEDED | 429 (`Retry-After` from `details.retryAfterSeconds`) |
 * | CANCELLED | 499 (client closed request) |
 * | CIRCUIT_OPEN | 503 (`Retry-After` from `details.retryAfterSeconds`) |
 * | UNAVAILABLE | 503 (`Retry-After` from `details.retryAfterSeconds`, when set) |
 * | TIMEOUT | 504 |
 * | APPROVAL_PENDING | 202 |
 * | DUPLICATE_HANDLER, EMPTY_CHAIN, MISSING_DEPENDENCY, LEASE_LOST, INTERNAL | 500 |
 *
 * @example
 * HTTP_STATUS_BY_ERROR_CODE[ErrorCode.RATE_LIMITED]; // 429
 */
export const HTTP_STATUS_BY_ERROR_CODE: Readonly<Record<ErrorCode, number>> = Object.freeze({
  [ErrorCode.INVALID_INPUT]: 400,
  [ErrorCode.INVALID_OPTIONS]: 400,
  [ErrorCode.UNAUTHENTICATED]: 401,
  [ErrorCode.PERMISSION_DENIED]: 403,
  [ErrorCode.POLICY_DENIED]: 403,
  [ErrorCode.NOT_FOUND]: 404,
  [ErrorCode.INVALID_STATE]: 409,
  [ErrorCode.RATE_LIMITED]: 429,
  [ErrorCode.BUDGET_EXCEEDED]: 429,
  [ErrorCode.CANCELLED]: 499,
  [ErrorCode.CIRCUIT_OPEN]: 503,
  [ErrorCode.UNAVAILABLE]: 503,
  [ErrorCode.TIMEOUT]: 504,
  [ErrorCode.APPROVAL_PENDING]: 202,
  [ErrorCode.DUPLICATE_HANDLER]: 500,
  [ErrorCode.EMPTY_CHAIN]: 500,
  [ErrorCode.MISSING_DEPENDENCY]: 500,
  [ErrorCode.INTERNAL]: 500,
  // A worker that lost its lease is a server-side condition, never a client mistake.
  [ErrorCode.LEASE_LOST]: 500,
} satisfies Record<ErrorCode, number>);

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

/** Whether a client may read the message of an error answered with `status`: 4xx, 503, 504. */
function isExposedStatus(status: number): boolean {
  return status < 500 || status === 503 || status === 504;
}

/**
 * Whether the message of a {@link NervaError} with `code` is written for clients (its status is a
 * 4xx, 503 or 504), as {@link toHttpError} answers it; other codes' messages are operator text.
 *
 * @example
 * isClientErrorCode("POLICY_DENIED"); // true
 * isClientErrorCode("INTERNAL"); // false
 */
export function isClientErrorCode(code: unknown): boolean {
  if (typeof code !== "string" || !Object.hasOwn(HTTP_STATUS_BY_ERROR_CODE, code)) return false;
  return isExposedStatus(HTTP_STATUS_BY_ERROR_CODE[code as ErrorCode]);
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
 * The HTTP status for anything thrown: a NervaError by its code (see
 * {@link HTTP_STATUS_BY_ERROR_CODE}), another error by its own `status`/`statusCode` when it is a
 * 4xx/5xx, otherwise 500.
 *
 * @example
 * httpStatusOf(new NervaError(ErrorCode.TIMEOUT, "too slow")); // 504
 */
export function httpStatusOf(err: unknown): number {
  if (err instanceof NervaError) return HTTP_STATUS_BY_ERROR_CODE[err.code] ?? 500;
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
 * Turns anything thrown into the status, headers and JSON body the bridges send. The message of a
 * 500 is never exposed (it may carry internals): the client gets a generic text and the request id.
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
  const exposed = isExposedStatus(status);
  if (err instanceof NervaError) {
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
