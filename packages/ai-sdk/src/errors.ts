import { ErrorCode, NervaError, isNervaError } from "@nerva/core";
import { failureOf, isApiCallError } from "./retry.js";
import { maskSecrets, scrubSecrets } from "./secrets.js";

/** The model a call went to, as errors and spans name it. */
export interface ModelLabel {
  /** Normalised provider (`openai`, `anthropic`, ...). */
  readonly provider: string;
  readonly model: string;
}

/**
 * `text` with secrets masked (the configured `secrets` by their own values, and keys of known
 * shapes), whitespace folded, cut to `max` characters.
 */
export function safeText(text: string, max = 200, secrets: readonly string[] = []): string {
  const clean = maskSecrets(text, secrets).replace(/\s+/g, " ").trim();
  return clean.length <= max ? clean : `${clean.slice(0, max - 1)}…`;
}

function messageOf(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  return typeof err === "string" ? err : String(err);
}

/** The `details` every model error carries. */
function detailsOf(label: ModelLabel, status?: number): Record<string, string | number> {
  return {
    provider: label.provider,
    model: label.model,
    ...(status === undefined ? {} : { status }),
  };
}

/**
 * The NervaError reporting a failed model call: RATE_LIMITED (with `retryAfterSeconds`) for a
 * 429, INTERNAL otherwise. The message names provider, model and HTTP status, never the key:
 * `secrets` are masked in the message and, in place, in the error kept as its `cause`.
 */
export function callError(
  err: unknown,
  label: ModelLabel,
  secrets: readonly string[] = [],
  retryAfterMs?: number,
): NervaError {
  if (isNervaError(err)) return err;
  scrubSecrets(err, secrets);
  const who = `${label.provider}/${label.model}`;
  if (isApiCallError(err)) {
    const { status, retryAfterMs: asked } = failureOf(err);
    const wait = retryAfterMs ?? asked;
    const what = safeText(messageOf(err), 200, secrets);
    if (status === 429) {
      return new NervaError(
        ErrorCode.RATE_LIMITED,
        `The model ${who} is rate limited (HTTP 429: ${what}). Retry later or lower the request rate.`,
        {
          cause: err,
          details: {
            ...detailsOf(label, status),
            retryAfterSeconds: Math.max(1, Math.ceil((wait ?? 1000) / 1000)),
          },
        },
      );
    }
    const http = status === undefined ? "no HTTP response" : `HTTP ${status}`;
    return new NervaError(
      ErrorCode.INTERNAL,
      `The model call to ${who} failed (${http}: ${what}).`,
      { cause: err, details: detailsOf(label, status) },
    );
  }
  return new NervaError(
    ErrorCode.INTERNAL,
    `The model call to ${who} failed: ${safeText(messageOf(err), 200, secrets)}`,
    { cause: err, details: detailsOf(label) },
  );
}

/** RATE_LIMITED without a wait: the provider's retry-after passes the request's deadline. */
export function waitPastDeadline(
  err: unknown,
  label: ModelLabel,
  waitMs: number,
  status: number | undefined,
  secrets: readonly string[] = [],
): NervaError {
  if (status === 429) return callError(err, label, secrets, waitMs);
  const base = callError(err, label, secrets);
  return new NervaError(
    base.code,
    `${base.message} A retry in ${Math.ceil(waitMs)} ms would pass the request's deadline, so it was not tried.`,
    { cause: err, details: { ...base.details } },
  );
}

/** The SDK's "no object generated" error: the model's text did not parse or match the schema. */
export function isNoObjectError(err: unknown): err is Error & { text?: unknown } {
  return (
    err instanceof Error &&
    (err.name === "AI_NoObjectGeneratedError" || err.name === "AI_NoOutputGeneratedError")
  );
}

/** INTERNAL for structured output that does not match the schema, with a preview of the text. */
export function invalidOutputError(
  err: Error & { text?: unknown },
  label: ModelLabel,
  secrets: readonly string[] = [],
): NervaError {
  scrubSecrets(err, secrets);
  const text = typeof err.text === "string" ? err.text : "";
  const preview = text === "" ? "no text" : `"${safeText(text, 160, secrets)}"`;
  return new NervaError(
    ErrorCode.INTERNAL,
    `The model ${label.provider}/${label.model} returned output that does not match the schema (${safeText(err.message, 160, secrets)}); it answered ${preview}.`,
    { cause: err, details: { ...detailsOf(label), preview: safeText(text, 160, secrets) } },
  );
}
