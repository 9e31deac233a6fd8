import type { IncomingHttpHeaders } from "node:http";
import { ErrorCode, NervaError } from "../errors.js";
import { checkUntrustedJson } from "../internal/json-limits.js";
import { HttpErrorCode, HttpRequestError } from "./request-errors.js";

/**
 * What {@link jsonBodyOf} reads from a framework request: its headers and the body the
 * framework's parser produced (`express.json()`, Fastify's JSON parser, Nest's body parser).
 *
 * @example
 * const req: JsonBodyRequest = { headers: { "content-type": "application/json" }, body: { message: "hi" } };
 */
export interface JsonBodyRequest {
  readonly headers: IncomingHttpHeaders;
  readonly body?: unknown;
}

/** `application/json`, or a `+json` type such as `application/merge-patch+json`. */
const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json$/;

function mediaType(headers: IncomingHttpHeaders): string | undefined {
  const value = headers["content-type"];
  if (value === undefined || value === "") return undefined;
  return value.split(";", 1)[0]?.trim().toLowerCase();
}

function declaresBody(headers: IncomingHttpHeaders): boolean {
  const length = headers["content-length"];
  return (length !== undefined && length !== "0") || headers["transfer-encoding"] !== undefined;
}

/**
 * The JSON object a client sent, checked before a route reads it: 415 (`HttpRequestError`
 * `UNSUPPORTED_MEDIA_TYPE`) for a body that is not JSON by its content type (`text/plain`, a form,
 * none at all), 400 (NervaError `INVALID_INPUT`) for a missing body, a body that is not an object
 * (a bare string, an array, `null`) or one nested deeper than 64 levels or holding more than a
 * million values (checked iteratively, before any recursive validation runs on it). Malformed JSON
 * and oversized bodies are refused earlier, by the framework's parser; the bridges answer those
 * too (400, 413).
 *
 * @example
 * app.post("/chat", async (req, res) => {
 *   const { message } = jsonBodyOf(req); // then orchestrator.handle(message, ...) checks it is a string
 * });
 */
export function jsonBodyOf(req: JsonBodyRequest): Record<string, unknown> {
  const type = mediaType(req.headers);
  const body = req.body;
  const sent = declaresBody(req.headers);
  if ((type !== undefined && !JSON_TYPE.test(type)) || (type === undefined && sent)) {
    throw new HttpRequestError(
      HttpErrorCode.UNSUPPORTED_MEDIA_TYPE,
      "Unsupported request body format: send JSON with the header content-type: application/json.",
    );
  }
  if (body === undefined) {
    if (sent) {
      // A JSON body arrived and nothing parsed it: the app lacks a body parser.
      throw new NervaError(
        ErrorCode.INTERNAL,
        "jsonBodyOf(req): the request carries a JSON body but no body parser read it. Install one before the route (e.g. app.use(express.json())).",
      );
    }
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      "Missing body: send a JSON object with the header content-type: application/json.",
      { issues: [{ path: "body", message: "required" }] },
    );
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    const got = body === null ? "null" : Array.isArray(body) ? "an array" : `a ${typeof body}`;
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      `Invalid body: must be a JSON object, got ${got}.`,
      { issues: [{ path: "body", message: "must be an object" }] },
    );
  }
  return checkUntrustedJson(
    body as Record<string, unknown>,
    "body",
    "Send a flatter, smaller JSON object.",
  );
}
