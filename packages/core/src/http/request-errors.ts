// Errors about the request itself (its body: malformed, too large, of the wrong type), whoever
// raised them: Nerva's own body check, Express's body-parser, Fastify's content-type parser. Each
// becomes one answer with a fixed message, so a parser's own message (which may quote the body or
// name the parser) never reaches the client.
import { ErrorCode, NervaError } from "../errors.js";

/**
 * Codes of the error answers about a request body that no {@link ErrorCode} covers (a malformed
 * or wrongly shaped body is `INVALID_INPUT`, 400).
 *
 * @example
 * if (body.error.code === HttpErrorCode.PAYLOAD_TOO_LARGE) shrink(request);
 */
export const HttpErrorCode = {
  /** 413: the body is larger than the endpoint accepts. */
  PAYLOAD_TOO_LARGE: "PAYLOAD_TOO_LARGE",
  /** 415: the body is not in a format the endpoint reads (e.g. `text/plain` where JSON is expected). */
  UNSUPPORTED_MEDIA_TYPE: "UNSUPPORTED_MEDIA_TYPE",
} as const;
export type HttpErrorCode = (typeof HttpErrorCode)[keyof typeof HttpErrorCode];

const STATUS_OF: Readonly<Record<HttpErrorCode, 413 | 415>> = {
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
};

/**
 * A request the server refuses for its body's size or format: answered with its status (413,
 * 415), its code and its message, which is written for the client.
 *
 * @example
 * throw new HttpRequestError(HttpErrorCode.UNSUPPORTED_MEDIA_TYPE, "Send JSON (content-type: application/json).");
 */
export class HttpRequestError extends Error {
  override readonly name = "HttpRequestError";
  readonly code: HttpErrorCode;
  readonly status: 413 | 415;
  /** Read by `toHttpError` (and http-errors' convention): the message is meant for the client. */
  readonly expose = true;

  constructor(code: HttpErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.status = STATUS_OF[code];
  }
}

const NOT_JSON = "Invalid body: malformed JSON. Send a well-formed JSON object.";
const TOO_LARGE = "The request body is larger than this endpoint accepts. Send a smaller body.";
const WRONG_TYPE =
  "Unsupported request body format: send JSON with the header content-type: application/json.";

const WRONG_CHARSET =
  "Unsupported charset: send the JSON body in UTF-8 (content-type: application/json; charset=utf-8).";
const WRONG_ENCODING =
  "Unsupported content-encoding: send the body uncompressed, or gzip- or deflate-compressed.";

const NOT_DECODABLE =
  "Invalid body: it could not be decoded as its content-encoding says. Send it uncompressed, or compressed as declared.";

const isClientStatus = (e: { status?: unknown; statusCode?: unknown }): boolean => {
  const status = e.status ?? e.statusCode;
  return typeof status === "number" && status >= 400 && status < 500;
};

const invalidBody = (message: string, cause: unknown): NervaError =>
  new NervaError(ErrorCode.INVALID_INPUT, message, {
    cause,
    issues: [{ path: "body", message: message.replace(/^Invalid body: /, "") }],
  });

/** Express's body-parser marks its errors with `type`; the ones about the request's body. */
const BODY_PARSER: Readonly<Record<string, (cause: unknown) => Error>> = {
  "entity.parse.failed": (cause) => invalidBody(NOT_JSON, cause),
  "entity.too.large": (cause) =>
    new HttpRequestError(HttpErrorCode.PAYLOAD_TOO_LARGE, TOO_LARGE, { cause }),
  "parameters.too.many": (cause) =>
    new HttpRequestError(HttpErrorCode.PAYLOAD_TOO_LARGE, TOO_LARGE, { cause }),
  "charset.unsupported": (cause) =>
    new HttpRequestError(HttpErrorCode.UNSUPPORTED_MEDIA_TYPE, WRONG_CHARSET, { cause }),
  "encoding.unsupported": (cause) =>
    new HttpRequestError(HttpErrorCode.UNSUPPORTED_MEDIA_TYPE, WRONG_ENCODING, { cause }),
  "request.size.invalid": (cause) =>
    invalidBody("Invalid body: its length does not match content-length.", cause),
  "request.aborted": (cause) => invalidBody("Invalid body: the client stopped sending it.", cause),
};

/** Fastify's content-type parser errors (stable codes), and its schema validation. */
const FASTIFY: Readonly<Record<string, (cause: unknown) => Error>> = {
  FST_ERR_CTP_INVALID_JSON_BODY: (cause) => invalidBody(NOT_JSON, cause),
  FST_ERR_CTP_EMPTY_JSON_BODY: (cause) =>
    invalidBody("Invalid body: it is empty but content-type says JSON.", cause),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: (cause) =>
    invalidBody("Invalid body: its length does not match content-length.", cause),
  FST_ERR_CTP_BODY_TOO_LARGE: (cause) =>
    new HttpRequestError(HttpErrorCode.PAYLOAD_TOO_LARGE, TOO_LARGE, { cause }),
  FST_ERR_CTP_INVALID_MEDIA_TYPE: (cause) =>
    new HttpRequestError(HttpErrorCode.UNSUPPORTED_MEDIA_TYPE, WRONG_TYPE, { cause }),
  FST_ERR_VALIDATION: (cause) => fromFastifyValidation(cause),
};

/** A Fastify schema failure: its messages name fields of the request, never server internals. */
function fromFastifyValidation(cause: unknown): NervaError {
  const e = cause as { validation?: unknown; validationContext?: unknown };
  const where = typeof e.validationContext === "string" ? e.validationContext : "body";
  const issues = (Array.isArray(e.validation) ? e.validation : []).slice(0, 20).map((v) => {
    const item = v as { instancePath?: unknown; message?: unknown };
    const path = typeof item.instancePath === "string" ? item.instancePath : "";
    return {
      path: [where, ...path.split("/").filter((p) => p !== "")].join("."),
      message: typeof item.message === "string" ? item.message : "is invalid",
    };
  });
  const detail = issues.map((i) => `${i.path}: ${i.message}`).join("; ");
  return new NervaError(
    ErrorCode.INVALID_INPUT,
    `Invalid ${where}${detail === "" ? "" : `: ${detail}`}.`,
    {
      cause,
      issues,
    },
  );
}

/**
 * The error to answer for `err`: a framework's error about the request body (Express's
 * body-parser, Fastify's content-type parser and schema validation, a `SyntaxError` a JSON parser
 * marked 400, a Node error such as zlib's that a parser marked 4xx) as a NervaError `INVALID_INPUT` or an {@link HttpRequestError} with a fixed message;
 * anything else unchanged. `toHttpError` applies it, so every bridge answers them alike.
 *
 * @example
 * app.use((err, req, res, next) => next(requestErrorOf(err))); // before a handler that answers it
 */
export function requestErrorOf(err: unknown): unknown {
  if (typeof err !== "object" || err === null || err instanceof NervaError) return err;
  const e = err as { type?: unknown; code?: unknown; status?: unknown; statusCode?: unknown };
  if (typeof e.type === "string") {
    const map = BODY_PARSER[e.type];
    if (map !== undefined) return map(err);
  }
  if (typeof e.code === "string") {
    const map = FASTIFY[e.code];
    if (map !== undefined) return map(err);
  }
  if (err instanceof SyntaxError && (e.status === 400 || e.statusCode === 400)) {
    return invalidBody(NOT_JSON, err);
  }
  if (typeof (err as { errno?: unknown }).errno === "number" && isClientStatus(e)) {
    // A Node error (zlib's Z_DATA_ERROR for a body that does not inflate...) that a body parser
    // marked 4xx: its code and message are Node's own, never client text.
    return invalidBody(NOT_DECODABLE, err);
  }
  return err;
}
