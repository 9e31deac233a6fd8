import { ErrorCode, NervaError, messageOf } from "../errors.js";
import type { ContextEvent } from "./events.js";
import type { Span } from "./span.js";

/**
 * Where spans and events go as they happen: an exporter (`@nerva/otel`), a log
 * (`JsonLinesTraceSink`), a store for the viewer (`TraceStore`), or your own.
 *
 * Give one to `ExecContext.create({ traceSink })` (or a bridge's `traceSink` option); every child
 * and fork of that context reports to it. Calls are synchronous and on the request path: keep
 * them cheap and defer I/O. A sink that throws never fails a request: its first error is passed
 * to its `onError` (or printed once as a process warning), later ones are only counted
 * ({@link traceSinkErrors}).
 *
 * @example
 * const sink: TraceSink = { onSpanEnd: (span) => console.log(span.name, span.durationMs) };
 * const ctx = ExecContext.create({ userId: "u1", traceSink: sink });
 */
export interface TraceSink {
  /** A span started (its end time and status are not set yet). */
  onSpanStart?(span: Span): void;
  /** A span ended: called exactly once per span, after its end time and status are set. */
  onSpanEnd(span: Span): void;
  /** An event was recorded with `ctx.event()`. */
  onEvent?(event: ContextEvent): void;
  /**
   * Runs `fn` with `span` as the current span of a host tracer (e.g. OpenTelemetry's active
   * context), so that spans the host creates inside a handler or tool nest under it. Must call
   * `fn` exactly once and return what it returns.
   */
  runInSpan?<T>(span: Span, fn: () => T): T;
  /** Exports what is buffered; rejects while exports fail. */
  forceFlush?(): Promise<void>;
  /** Flushes and releases the sink's resources. */
  shutdown?(): Promise<void>;
  /** Told about the first error this sink throws from one of its methods. */
  onError?(error: unknown): void;
}

/** Whether `value` has the shape of a {@link TraceSink}. */
export function isTraceSink(value: unknown): value is TraceSink {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as TraceSink).onSpanEnd === "function"
  );
}

/**
 * A user's sink as the context calls it: each call guarded, so that a throwing sink costs the
 * request nothing. One per sink object (cached), shared by every context given that sink.
 */
export class GuardedSink {
  readonly inner: TraceSink;
  errors = 0;
  readonly #start: boolean;
  readonly #event: boolean;
  readonly #run: boolean;

  constructor(inner: TraceSink) {
    this.inner = inner;
    this.#start = typeof inner.onSpanStart === "function";
    this.#event = typeof inner.onEvent === "function";
    this.#run = typeof inner.runInSpan === "function";
  }

  spanStart(span: Span): void {
    if (!this.#start) return;
    try {
      this.inner.onSpanStart!(span);
    } catch (err) {
      this.#fail(err, "onSpanStart");
    }
  }

  spanEnd(span: Span): void {
    try {
      this.inner.onSpanEnd(span);
    } catch (err) {
      this.#fail(err, "onSpanEnd");
    }
  }

  event(event: ContextEvent): void {
    if (!this.#event) return;
    try {
      this.inner.onEvent!(event);
    } catch (err) {
      this.#fail(err, "onEvent");
    }
  }

  /** `fn()` inside the sink's `runInSpan`; an error of the sink's own runs `fn` without it. */
  run<T>(span: Span, fn: () => T): T {
    if (!this.#run) return fn();
    // 0: fn not called yet, 1: fn running (or threw), 2: fn returned `value`.
    let state = 0;
    let value: T | undefined;
    try {
      return this.inner.runInSpan!(span, () => {
        state = 1;
        value = fn();
        state = 2;
        return value;
      });
    } catch (err) {
      if (state === 1) throw err; // the work's own error, not the sink's
      this.#fail(err, "runInSpan");
      return state === 2 ? (value as T) : fn();
    }
  }

  #fail(err: unknown, method: string): void {
    if (++this.errors > 1) return;
    const report = this.inner.onError;
    if (typeof report === "function") {
      try {
        report.call(this.inner, err);
        return;
      } catch {
        // an onError that throws falls back to the warning below
      }
    }
    process.emitWarning(
      `Nerva trace sink: ${method} threw "${messageOf(err)}". The request went on; later errors of this sink are only counted (traceSinkErrors(sink)).`,
      { code: "NERVA_TRACE_SINK" },
    );
  }
}

const guarded = new WeakMap<TraceSink, GuardedSink>();

/** The guarded form of `sink` (one per sink object). Throws INVALID_OPTIONS for a non-sink. */
export function guardSink(sink: TraceSink, label = "traceSink"): GuardedSink {
  let g = guarded.get(sink);
  if (g === undefined) {
    if (!isTraceSink(sink)) {
      throw new NervaError(
        ErrorCode.INVALID_OPTIONS,
        `Invalid ${label}: must be an object with an onSpanEnd(span) method (a TraceSink).`,
        { issues: [{ path: label, message: "must implement TraceSink (onSpanEnd)" }] },
      );
    }
    guarded.set(sink, (g = new GuardedSink(sink)));
  }
  return g;
}

/**
 * How many times `sink` has thrown from one of its methods since it was first used (only the
 * first error is reported).
 *
 * @example
 * expect(traceSinkErrors(sink)).toBe(0);
 */
export function traceSinkErrors(sink: TraceSink): number {
  return guarded.get(sink)?.errors ?? 0;
}
