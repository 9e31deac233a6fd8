import { ErrorCode, NervaError } from "../errors.js";
import type { ContextEvent } from "../context/events.js";
import type { Span } from "../context/span.js";
import type { TraceSink } from "./sink.js";

/** Options of {@link MemoryTraceSink}. */
export interface MemoryTraceSinkOptions {
  /** Most ended spans kept; the oldest are dropped (and counted) past it. Default 10,000. */
  maxSpans?: number;
  /** Most events kept; the oldest are dropped (and counted) past it. Default 10,000. */
  maxEvents?: number;
}

function limit(value: number | undefined, label: string): number {
  if (value === undefined) return 10_000;
  if (!Number.isInteger(value) || value < 1) {
    throw new NervaError(
      ErrorCode.INVALID_OPTIONS,
      `Invalid ${label}: must be a positive integer (got ${String(value)}).`,
      { issues: [{ path: label, message: "must be a positive integer" }] },
    );
  }
  return value;
}

/**
 * Appends `item`, keeping the newest `max` in view. Rather than shifting the oldest out on each
 * append once full (O(max) each), the array grows to twice `max` and is then cut back to the newest
 * `max` in one copy: O(1) amortised, at most 2 × max entries held. Returns the array to keep.
 */
function append<T>(items: T[], item: T, max: number): T[] {
  items.push(item);
  return items.length >= 2 * max ? items.slice(items.length - max) : items;
}

/** The newest `max` of `items`. */
function newest<T>(items: T[], max: number): readonly T[] {
  return items.length > max ? items.slice(items.length - max) : items;
}

/**
 * Keeps ended spans and events in memory, in the order they ended: for tests and for code that
 * inspects a trace after the fact. Bounded: past `maxSpans` the oldest are dropped and counted in
 * `droppedSpans`.
 *
 * @example
 * const sink = new MemoryTraceSink();
 * const ctx = ExecContext.create({ traceSink: sink });
 * await runtime.invoke("my_agent", { message: "hi" }, ctx);
 * sink.spans.map((s) => s.name); // ["runtime.invoke"]
 */
export class MemoryTraceSink implements TraceSink {
  readonly #maxSpans: number;
  readonly #maxEvents: number;
  #spans: Span[] = [];
  #events: ContextEvent[] = [];
  /** Spans started so far (ended or not). */
  started = 0;
  droppedSpans = 0;
  droppedEvents = 0;

  constructor(options: MemoryTraceSinkOptions = {}) {
    this.#maxSpans = limit(options.maxSpans, "options.maxSpans");
    this.#maxEvents = limit(options.maxEvents, "options.maxEvents");
  }

  /** Ended spans, in the order they ended. */
  get spans(): readonly Span[] {
    return newest(this.#spans, this.#maxSpans);
  }

  /** Recorded events, in order. */
  get events(): readonly ContextEvent[] {
    return newest(this.#events, this.#maxEvents);
  }

  /** Ended spans of one trace. */
  trace(traceId: string): Span[] {
    return this.spans.filter((s) => s.traceId === traceId);
  }

  onSpanStart(): void {
    this.started++;
  }

  onSpanEnd(span: Span): void {
    if (this.#spans.length >= this.#maxSpans) this.droppedSpans++;
    this.#spans = append(this.#spans, span, this.#maxSpans);
  }

  onEvent(event: ContextEvent): void {
    if (this.#events.length >= this.#maxEvents) this.droppedEvents++;
    this.#events = append(this.#events, event, this.#maxEvents);
  }

  /** Forgets everything kept and resets the counters. */
  clear(): void {
    this.#spans = [];
    this.#events = [];
    this.started = this.droppedSpans = this.droppedEvents = 0;
  }
}
