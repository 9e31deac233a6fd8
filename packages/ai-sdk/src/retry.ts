import { retryDelaySeconds, type RetryPolicy } from "@nerva/core/runs";

/** What the adapter knows about a failed provider call. */
export interface CallFailure {
  /** HTTP status, when the provider answered. */
  readonly status: number | undefined;
  /** Whether Nerva may try again (429, 408, 5xx, network errors). */
  readonly retryable: boolean;
  /** The wait the provider asked for (`retry-after-ms` / `retry-after`), in milliseconds. */
  readonly retryAfterMs: number | undefined;
}

interface ApiErrorLike {
  readonly name?: unknown;
  readonly statusCode?: unknown;
  readonly responseHeaders?: unknown;
  readonly isRetryable?: unknown;
}

/** The SDK's `APICallError`, recognised by name so that any installed copy matches. */
export function isApiCallError(err: unknown): err is ApiErrorLike & Error {
  return err instanceof Error && err.name === "AI_APICallError";
}

function header(headers: unknown, name: string): string | undefined {
  if (typeof headers !== "object" || headers === null) return undefined;
  const value = (headers as Record<string, unknown>)[name];
  return typeof value === "string" ? value : undefined;
}

/**
 * The wait a provider asked for: `retry-after-ms` (milliseconds, OpenAI's) first, then
 * `retry-after` as seconds or an HTTP date. `undefined` when absent or unreadable.
 */
export function retryAfterMsOf(headers: unknown, now = Date.now()): number | undefined {
  const ms = header(headers, "retry-after-ms");
  if (ms !== undefined) {
    const n = Number(ms);
    if (ms.trim() !== "" && Number.isFinite(n) && n >= 0) return n;
  }
  const after = header(headers, "retry-after");
  if (after === undefined || after.trim() === "") return undefined;
  const seconds = Number(after);
  if (Number.isFinite(seconds)) return seconds >= 0 ? seconds * 1000 : undefined;
  const date = Date.parse(after);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Classifies a failed call: status, whether to retry, and the wait the provider asked for. */
export function failureOf(err: unknown): CallFailure {
  if (isApiCallError(err)) {
    const status = typeof err.statusCode === "number" ? err.statusCode : undefined;
    const retryable =
      status === undefined
        ? err.isRetryable === true // no answer: a network error the SDK marked retryable
        : status === 408 || status === 429 || status >= 500;
    return { status, retryable, retryAfterMs: retryAfterMsOf(err.responseHeaders) };
  }
  // fetch's own network failures, when a provider lets them through unwrapped.
  const retryable =
    err instanceof TypeError &&
    /fetch failed|network|socket|ECONN|EPIPE|terminated/i.test(err.message);
  return { status: undefined, retryable, retryAfterMs: undefined };
}

/**
 * The wait before retry number `attempt` (0 for the first retry), in milliseconds: the runs'
 * backoff ({@link retryDelaySeconds}) of `retry`; or exactly the provider's retry-after when it
 * gave one.
 */
export function retryDelayMs(
  attempt: number,
  failure: CallFailure,
  retry: RetryPolicy,
  random: () => number,
): number {
  if (failure.retryAfterMs !== undefined) return failure.retryAfterMs;
  return retryDelaySeconds(retry, attempt + 1, random) * 1000;
}

/**
 * Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. The timer and
 * the listener are released either way.
 */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
