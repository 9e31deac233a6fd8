import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import { jsonLimitViolation } from "../internal/json-limits.js";
import { safeListener } from "../internal/report.js";
import { toHttpError } from "./status.js";

/**
 * One Server-Sent Event to write: `data` (strings as they are, anything else as JSON), an
 * optional `event` name (`message` when absent) and an optional `id` that a reconnecting client
 * sends back as `Last-Event-ID`. `id` and `event` may not hold a line break.
 *
 * @example
 * const message: SSEMessage = { id: e.seq, event: e.type, data: clientRunEvent(e) };
 */
export interface SSEMessage {
  readonly data: unknown;
  readonly event?: string;
  readonly id?: string | number;
}

/** A message ready for the wire: `event` named (`message` by default), text `id` and `data`. */
type WireMessage = SSEMessage & {
  readonly event: string;
  readonly data: string;
  readonly id?: string;
};

/**
 * How an SSE response ended: the source ended (`done`), it failed (`error`, after an `error`
 * event was written) or the client left first (`disconnected`).
 *
 * @example
 * if ((await writeSSE(res, stream, ctx)) === "disconnected") metrics.count("sse.abandoned");
 */
export type SSEOutcome = "done" | "error" | "disconnected";

/**
 * Options of {@link createSSEEventSource} and `writeSSE`.
 *
 * @example
 * const options: SSEEventSourceOptions<RunEvent> = {
 *   message: (e) => ({ id: e.seq, event: e.type, data: clientRunEvent(e) }),
 * };
 */
export interface SSEEventSourceOptions<T = unknown> {
  /** Cancelled when the stream stops early (the client left); its request id goes into `done`/`error`. */
  readonly ctx?: ExecContext | null;
  /**
   * Each item as an event. Default: a `message` event whose data is the item and whose id is a
   * running number (1, 2, 3…): the chunks of an answer. Map a run's events to
   * `{ id: e.seq, event: e.type, data }` so that `Last-Event-ID` resumes after `e.seq`.
   */
  readonly message?: (item: T) => SSEMessage;
  /**
   * Data of the final `done` event, from what the source returned (an async generator's return
   * value, or the `response` of an `orchestrator.stream()`); `false` for no final event.
   * Default: `{ requestId, result }` with the default `message`, none with a `message` of yours
   * (a run's events end with the run's own final event).
   */
  readonly done?: ((returned: unknown) => unknown) | false;
  /** Called once with the error that ended the stream, after its `error` event was produced. */
  readonly onError?: (error: unknown) => void;
}

/**
 * A source as Server-Sent Events, pulled one at a time (see {@link createSSEEventSource}).
 *
 * @example
 * const events: SSEEventSource = createSSEEventSource(stream, { ctx });
 */
export interface SSEEventSource extends AsyncIterableIterator<WireMessage> {
  /** How the stream ended, once it did: `null` while events may still come. */
  readonly outcome: SSEOutcome | null;
  /** The consumer is gone: cancels the context, returns the source, ends a pending `next()`. */
  cancel(reason?: string): void;
  /** Cancels (see `cancel`) and ends the iteration. */
  return(): Promise<IteratorResult<WireMessage>>;
}

const CANCELLED = Symbol("cancelled");
const END: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });

class EventSourceImpl<T> implements SSEEventSource {
  readonly #source: AsyncIterable<T>;
  readonly #iterator: AsyncIterator<T>;
  readonly #options: SSEEventSourceOptions<T>;
  readonly #done: ((returned: unknown) => unknown) | false;
  /** `options.onError`, safe to call from the stream's pull (a throw there is not the reader's). */
  readonly #report: (err: unknown) => void;
  #outcome: SSEOutcome | null = null;
  #wake: ((value: typeof CANCELLED) => void) | null = null;
  /** The running id of the default mapping. */
  #count = 0;

  constructor(source: AsyncIterable<T>, options: SSEEventSourceOptions<T>) {
    this.#source = source;
    this.#iterator = source[Symbol.asyncIterator]();
    this.#options = options;
    const requestId = (): string | null => options.ctx?.requestId ?? null;
    this.#done =
      options.done ??
      (options.message === undefined
        ? (returned) => ({ requestId: requestId(), result: returned ?? null })
        : false);
    this.#report = safeListener(options.onError, "the SSE event source's onError");
  }

  get outcome(): SSEOutcome | null {
    return this.#outcome;
  }

  async next(): Promise<IteratorResult<WireMessage>> {
    if (this.#outcome !== null) return END;
    // Whether the failure, if any, came from the source (which has then ended on its own).
    let fromSource = true;
    try {
      const step = await new Promise<IteratorResult<T> | typeof CANCELLED>((resolve, reject) => {
        this.#wake = resolve;
        this.#iterator.next().then(resolve, reject);
      });
      this.#wake = null;
      if (step === CANCELLED || this.#outcome !== null) return END;
      fromSource = false;
      if (step.done !== true) return { done: false, value: this.#message(step.value) };
      if (this.#done === false) {
        this.#outcome = "done";
        return END;
      }
      const returned = await finalResult(this.#source, step.value);
      if (this.#outcome !== null) return END;
      const data = this.#done(returned) ?? null;
      const id = this.#options.message === undefined ? String(++this.#count) : undefined;
      const done = wire({ event: "done", data, ...(id === undefined ? {} : { id }) });
      this.#outcome = "done";
      return { done: false, value: done };
    } catch (err) {
      this.#wake = null;
      if (this.#outcome !== null) return END;
      this.#outcome = "error";
      // An item that cannot be sent (or a `done` that threw) ends the stream here, while the
      // source may still be producing: it is stopped as a client that left would stop it.
      if (!fromSource) this.#stopSource("the stream failed");
      const { status, body } = toHttpError(err, this.#options.ctx?.requestId ?? null);
      this.#report(err);
      // No id: a client that reconnects resumes after the last event it really got.
      return { done: false, value: { event: "error", data: JSON.stringify({ status, ...body }) } };
    }
  }

  #message(item: T): WireMessage {
    if (this.#options.message === undefined) {
      // A running number needs no check: built as it is.
      return { id: String(++this.#count), event: "message", data: dataText(item) };
    }
    const message = this.#options.message(item);
    if (typeof message !== "object" || message === null) {
      throw new NervaError(
        ErrorCode.INTERNAL,
        "Invalid SSE message: options.message must return { data, event?, id? }.",
      );
    }
    return wire(message);
  }

  async return(): Promise<IteratorResult<WireMessage>> {
    this.cancel();
    return END;
  }

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

  [Symbol.asyncIterator](): SSEEventSource {
    return this;
  }
}

/** What a finished stream produced: its return value, or the `response` it carries. */
async function finalResult(source: AsyncIterable<unknown>, returned: unknown): Promise<unknown> {
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

/** `message` checked and in text: an id or event name with a line break would forge events. */
function wire(message: SSEMessage): WireMessage {
  const id = message.id === undefined ? undefined : field("id", message.id);
  const event = message.event === undefined ? "message" : field("event", message.event);
  const data = dataText(message.data);
  return id === undefined ? { event, data } : { id, event, data };
}

function field(name: "id" | "event", value: unknown): string {
  const text =
    typeof value === "number" && Number.isFinite(value) && name === "id" ? String(value) : value;
  if (typeof text !== "string" || /[\r\n\0]/.test(text) || (name === "event" && text === "")) {
    throw new NervaError(
      ErrorCode.INTERNAL,
      `Invalid SSE ${name} ${JSON.stringify(String(value)).slice(0, 80)}: must be ${
        name === "id" ? "a finite number or a string" : "a non-empty string"
      } without line breaks.`,
    );
  }
  return text;
}

/** An event's data: strings as they are, anything else as JSON (bounded before stringify). */
function dataText(value: unknown): string {
  if (typeof value === "string") return value;
  const violation = jsonLimitViolation(value);
  if (violation !== null) {
    throw new NervaError(ErrorCode.INTERNAL, `A stream chunk is ${violation}: it cannot be sent.`);
  }
  return JSON.stringify(value) ?? "";
}

/**
 * The items of `source` (e.g. `orchestrator.stream(message, ctx)`, or a run's events) as
 * Server-Sent Events, pulled one at a time: each `next()` takes one item from the source (so the
 * source runs no further ahead than its consumer writes) and gives one event (see
 * `options.message`), then a final `done` event if configured, or an `error` event (the JSON error
 * body with its status; a 5xx never shows its message, and goes to `onError` once) if the source
 * throws or an item cannot be sent. `return()` or `cancel()` (the client left) cancels the
 * context and the source at once, even while a `next()` waits on the source; that `next()` then
 * ends the iteration. Never throws. `writeSSE` writes these events on a Node response; a bridge
 * with its own stream (NestJS's `@Sse()`) reads them directly.
 *
 * @example
 * const events = createSSEEventSource(orchestrator.stream(message, ctx), { ctx });
 * for await (const e of events) subscriber.next({ id: e.id, type: e.event, data: e.data });
 */
export function createSSEEventSource<T>(
  source: AsyncIterable<T>,
  options: SSEEventSourceOptions<T> = {},
): SSEEventSource {
  return new EventSourceImpl(source, options);
}
