import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import { jsonLimitViolation } from "../internal/json-limits.js";
import { safeListener } from "../internal/report.js";
import { toHttpError } from "./status.js";

/**
 * Formats one SSE event. Multi-line data becomes several `data:` lines (clients join them with
 * `\n`); a leading space survives because one space always follows `data:`. An `event` of
 * `message` (what clients assume without one) writes no `event:` line.
 *
 * @example
 * formatSSEEvent("hello\nworld"); // "data: hello\ndata: world\n\n"
 * formatSSEEvent('{"ok":true}', "done"); // "event: done\ndata: {\"ok\":true}\n\n"
 */
export function formatSSEEvent(data: string, event?: string): string {
  let out =
    event === undefined || event === "message" ? "" : `event: ${event.replace(/[\r\n]/g, "")}\n`;
  for (const line of data.split(/\r\n|\r|\n/)) out += `data: ${line}\n`;
  return out + "\n";
}

/**
 * What a finished stream produced: the async generator's return value, or, for a stream with a
 * `response` promise (`orchestrator.stream()`), the final response.
 *
 * @example
 * const result = await finalResult(stream, step.value); // { text, status, ... }
 */
export async function finalResult(
  source: AsyncIterable<unknown>,
  returned: unknown,
): Promise<unknown> {
  if (returned !== undefined) return returned;
  const response = (source as { response?: unknown }).response;
  if (
    typeof response === "object" &&
    response !== null &&
    typeof (response as PromiseLike<unknown>).then === "function"
  ) {
    return await (response as PromiseLike<unknown>);
  }
  return undefined;
}

/**
 * How an SSE response ended.
 *
 * @example
 * if ((await writeSSE(res, stream, ctx)) === "disconnected") metrics.count("sse.abandoned");
 */
export type SSEOutcome = "done" | "error" | "disconnected";

/**
 * Options of {@link createSSEEventSource}.
 *
 * @example
 * const options: SSEEventSourceOptions = { ctx, onError: (err) => scope.report(err) };
 */
export interface SSEEventSourceOptions {
  /** Cancelled when the consumer cancels (the client left); its request id goes into `done`/`error`. */
  readonly ctx?: ExecContext | null;
  /**
   * Data of the final `done` event, from what the iterable returned (an async generator's return
   * value, or the `response` of an `orchestrator.stream()`). Default: `{ requestId, result }`.
   */
  readonly done?: (returned: unknown) => unknown;
  /** Called once with the error that ended the stream, after its `error` event was produced. */
  readonly onError?: (error: unknown) => void;
}

/**
 * One event of a Nerva stream, before it is written: a `message` per chunk, then one `done`
 * (`{ requestId, result }`) or `error` (`{ status, error }`) event. `data` is the event's text
 * (JSON for `done` and `error`). {@link formatSSEEvent} gives its wire form.
 *
 * @example
 * const wire = formatSSEEvent(e.data, e.type === "message" ? undefined : e.type);
 */
export interface SSEStreamEvent {
  readonly type: "message" | "done" | "error";
  readonly data: string;
}

const CANCELLED = Symbol("cancelled");
const END: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });

/**
 * A stream of chunks as Server-Sent Events, pulled one at a time: each `next()` takes one chunk
 * from the source (so the source runs no further ahead than its consumer writes) and gives one
 * {@link SSEStreamEvent} — a `message` per chunk, then a final `done` event, or an `error` event
 * (the JSON error body with its status; a 5xx never shows its message, and goes to `onError`
 * once) if the source throws. `return()` or `cancel()` (the client left) cancels the context and
 * the source at once, even while a `next()` waits on the source; that `next()` then ends the
 * iteration. Never throws.
 *
 * @example
 * const events = createSSEEventSource(orchestrator.stream(message, ctx), { ctx });
 * for await (const e of events) if (!res.write(formatSSEEvent(e.data, e.type))) await once(res, "drain");
 */
export class SSEEventSource implements AsyncIterableIterator<SSEStreamEvent> {
  readonly #source: AsyncIterable<unknown>;
  readonly #iterator: AsyncIterator<unknown>;
  readonly #options: SSEEventSourceOptions;
  /** `options.onError`, safe to call from the stream's pull (a throw there is not the reader's). */
  readonly #report: (err: unknown) => void;
  #outcome: SSEOutcome | null = null;
  #wake: ((value: typeof CANCELLED) => void) | null = null;

  constructor(source: AsyncIterable<unknown>, options: SSEEventSourceOptions = {}) {
    this.#source = source;
    this.#iterator = source[Symbol.asyncIterator]();
    this.#options = options;
    this.#report = safeListener(options.onError, "the SSE event source's onError");
  }

  /** How the stream ended, once it did: `null` while events may still come. */
  get outcome(): SSEOutcome | null {
    return this.#outcome;
  }

  async next(): Promise<IteratorResult<SSEStreamEvent>> {
    if (this.#outcome !== null) return END;
    const requestId = this.#options.ctx?.requestId ?? null;
    // Whether the failure, if any, came from the source (which has then ended on its own).
    let fromSource = true;
    try {
      const step = await new Promise<IteratorResult<unknown> | typeof CANCELLED>(
        (resolve, reject) => {
          this.#wake = resolve;
          this.#iterator.next().then(resolve, reject);
        },
      );
      this.#wake = null;
      if (step === CANCELLED || this.#outcome !== null) return END;
      fromSource = false;
      if (step.done !== true) {
        return { done: false, value: { type: "message", data: chunkText(step.value) } };
      }
      const returned = await finalResult(this.#source, step.value);
      if (this.#outcome !== null) return END;
      const data =
        this.#options.done === undefined
          ? { requestId, result: returned ?? null }
          : this.#options.done(returned);
      this.#outcome = "done";
      return { done: false, value: { type: "done", data: JSON.stringify(data ?? null) } };
    } catch (err) {
      this.#wake = null;
      if (this.#outcome !== null) return END;
      this.#outcome = "error";
      // A chunk that cannot be sent (or a `done` that threw) ends the stream here, while the
      // source may still be producing: it is stopped as a client that left would stop it.
      if (!fromSource) this.#stopSource("the stream failed");
      const { status, body } = toHttpError(err, requestId);
      this.#report(err);
      return { done: false, value: { type: "error", data: JSON.stringify({ status, ...body }) } };
    }
  }

  /** Cancels (see {@link SSEEventSource.cancel}) and ends the iteration. */
  async return(): Promise<IteratorResult<SSEStreamEvent>> {
    this.cancel();
    return END;
  }

  /**
   * The consumer is gone: cancels the context (its `signal` aborts in every handler of the
   * request), calls `return()` on the source without waiting for it, and ends a pending `next()`.
   * Does nothing once the stream ended.
   */
  cancel(reason = "client disconnected"): void {
    if (this.#outcome !== null) return;
    this.#outcome = "disconnected";
    this.#stopSource(reason);
  }

  /** Cancels the context, ends a pending `next()` and returns the source, without waiting. */
  #stopSource(reason: string): void {
    this.#options.ctx?.cancel(reason);
    const wake = this.#wake;
    this.#wake = null;
    wake?.(CANCELLED);
    // An async generator suspended in an await queues return() until it resumes: never wait for it.
    void Promise.resolve()
      .then(() => this.#iterator.return?.())
      .catch(() => undefined);
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<SSEStreamEvent> {
    return this;
  }
}

/** A chunk's event data: strings as they are, anything else as JSON (bounded before stringify). */
function chunkText(value: unknown): string {
  if (typeof value === "string") return value;
  const violation = jsonLimitViolation(value);
  if (violation !== null) {
    throw new NervaError(ErrorCode.INTERNAL, `A stream chunk is ${violation}: it cannot be sent.`);
  }
  return JSON.stringify(value) ?? "";
}

/**
 * Creates an {@link SSEEventSource} over `source` (e.g. `orchestrator.stream(message, ctx)`): the
 * one event source behind `writeSSE` and every bridge's streaming helper.
 *
 * @example
 * const events = createSSEEventSource(source, { ctx, onError: (err) => scope.report(err) });
 * res.on("close", () => events.cancel());
 */
export function createSSEEventSource(
  source: AsyncIterable<unknown>,
  options: SSEEventSourceOptions = {},
): SSEEventSource {
  return new SSEEventSource(source, options);
}
