import { z } from "zod";
import { ErrorCode, parseOrThrow } from "../errors.js";
import type { ContextEvent } from "../context/events.js";
import type { Span, SpanKind } from "../context/span.js";
import type { Attributes } from "../types/trace.js";
import type { SpanUsage, TokenUsage } from "../types/usage.js";
import type { TraceSink } from "./sink.js";
import { TRACE_ID } from "../types/trace.js";

/** Options of {@link TraceStore}. */
export interface TraceStoreOptions {
  /** Most traces kept; past it the oldest trace is dropped whole (and counted). Default 200. */
  maxTraces?: number;
  /** Most spans kept per trace (open ones included); later ones are dropped and counted. Default 5,000. */
  maxSpansPerTrace?: number;
  /** Most events kept per trace; later ones are dropped and counted. Default 1,000. */
  maxEventsPerTrace?: number;
}

const limit = (max: number) => z.number().int().min(1).max(max);
const OptionsSchema = z
  .object({
    maxTraces: limit(100_000).default(200),
    maxSpansPerTrace: limit(1_000_000).default(5_000),
    maxEventsPerTrace: limit(1_000_000).default(1_000),
  })
  .strict();

const QuerySchema = z
  .object({
    limit: z.number().int().min(1).max(100_000).optional(),
    userId: z.string().max(256).nullable().optional(),
  })
  .strict();

/** How a trace ended: its root span's status, or `open` while the root has not ended. */
export type TraceStatus = "ok" | "error" | "open";

/** One trace of a {@link TraceStore}, as the list of recent traces shows it. */
export interface TraceSummary {
  readonly traceId: string;
  /** The name of the trace's root: its earliest span whose parent is not in the trace. */
  readonly rootName: string;
  readonly rootSpanId: string;
  /** Epoch milliseconds of its earliest span's start. */
  readonly startMs: number;
  /** From the first start to the last end; `null` while the root is open. */
  readonly durationMs: number | null;
  readonly status: TraceStatus;
  /** Spans that ended with status `error`. */
  readonly errorCount: number;
  readonly userId: string | null;
  readonly sessionId: string | null;
  /** The sum of every kept span's own usage (so nothing is counted twice). */
  readonly usage: TokenUsage;
  /** Spans kept (ended and open). */
  readonly spanCount: number;
  readonly openSpanCount: number;
  readonly eventCount: number;
  /** Spans of this trace dropped past `maxSpansPerTrace`. */
  readonly droppedSpans: number;
  /** Events of this trace dropped past `maxEventsPerTrace`. */
  readonly droppedEvents: number;
}

/** One span of a {@link TraceDetail}. */
export interface TraceDetailSpan {
  readonly id: string;
  readonly parentId: string | null;
  readonly requestId: string;
  readonly name: string;
  readonly kind: SpanKind;
  /** 0 for a root; the number of kept ancestors otherwise. */
  readonly depth: number;
  readonly startMs: number;
  readonly endMs: number | null;
  readonly durationMs: number | null;
  /** `open` while the span has not ended (when the trace was read). */
  readonly status: "ok" | "error" | "open";
  readonly error: string | null;
  readonly attributes: Readonly<Attributes>;
  /** Usage recorded while this span was current. */
  readonly usage: SpanUsage;
  /** Usage of this span and every span below it. */
  readonly totalUsage: SpanUsage;
}

/** One event of a {@link TraceDetail}. */
export interface TraceDetailEvent {
  readonly name: string;
  readonly timestampMs: number;
  readonly spanId: string | null;
  readonly requestId: string;
  readonly attributes: Readonly<Attributes>;
}

/** A whole trace: its summary, its spans in tree order (parents first, siblings by start), its events. */
export interface TraceDetail extends TraceSummary {
  readonly spans: readonly TraceDetailSpan[];
  readonly events: readonly TraceDetailEvent[];
}

interface Entry {
  readonly traceId: string;
  readonly ended: Span[];
  readonly open: Set<Span>;
  readonly events: ContextEvent[];
  droppedSpans: number;
  droppedEvents: number;
}

/**
 * A trace sink that keeps the most recent traces in memory, whole, for the trace viewer
 * (`@nerva/core/viewer`) or for code that inspects recent requests. Bounded both ways: past
 * `maxTraces` the oldest trace is dropped, past `maxSpansPerTrace` (or `maxEventsPerTrace`) a
 * trace keeps its first spans (events) and counts the rest. Spans that have started but not ended
 * are part of their trace and read as `open`.
 *
 * Its sink methods only file the span or event under its trace (no copy, no formatting); reading
 * (`traces()`, `trace(id)`) builds the summaries.
 *
 * @example
 * const store = new TraceStore({ maxTraces: 200, maxSpansPerTrace: 5000 });
 * app.use(nervaMiddleware({ traceSink: store }));
 * // later: the newest trace, its spans
 * const [latest] = store.traces({ limit: 1 });
 * const detail = latest === undefined ? null : store.trace(latest.traceId);
 */
export class TraceStore implements TraceSink {
  readonly maxTraces: number;
  readonly maxSpansPerTrace: number;
  readonly maxEventsPerTrace: number;
  /** Traces dropped whole past `maxTraces`. */
  droppedTraces = 0;
  /** Spans dropped past `maxSpansPerTrace`, all traces together (dropped traces' not included). */
  droppedSpans = 0;
  /** Events dropped past `maxEventsPerTrace`, all traces together. */
  droppedEvents = 0;
  readonly #traces = new Map<string, Entry>();
  // The kept traces in first-seen order, as a ring: slot #next holds the oldest (or nothing yet).
  // Not the Map's own order: finding a Map's first key walks over the slots its deletions left,
  // which made eviction cost grow with maxTraces.
  readonly #ring: (Entry | undefined)[] = [];
  #next = 0;

  constructor(options: TraceStoreOptions = {}) {
    const o = parseOrThrow(
      OptionsSchema,
      options,
      ErrorCode.INVALID_OPTIONS,
      "options",
      "maxTraces, maxSpansPerTrace and maxEventsPerTrace are positive integers.",
    );
    this.maxTraces = o.maxTraces;
    this.maxSpansPerTrace = o.maxSpansPerTrace;
    this.maxEventsPerTrace = o.maxEventsPerTrace;
  }

  /** Traces kept. */
  get size(): number {
    return this.#traces.size;
  }

  onSpanStart(span: Span): void {
    const entry = this.#entry(span.traceId);
    // A span that finds no room is not tracked now; it is counted once, when it ends.
    if (entry.ended.length + entry.open.size < this.maxSpansPerTrace) entry.open.add(span);
  }

  onSpanEnd(span: Span): void {
    const entry = this.#entry(span.traceId);
    if (entry.open.delete(span) || entry.ended.length + entry.open.size < this.maxSpansPerTrace) {
      entry.ended.push(span);
    } else {
      entry.droppedSpans++;
      this.droppedSpans++;
    }
  }

  onEvent(event: ContextEvent): void {
    const entry = this.#entry(event.traceId);
    if (entry.events.length < this.maxEventsPerTrace) {
      entry.events.push(event);
    } else {
      entry.droppedEvents++;
      this.droppedEvents++;
    }
  }

  /**
   * Summaries of the kept traces, newest first (by the order they were first seen). `userId`
   * keeps only that user's traces (`null`: anonymous ones). Throws INVALID_INPUT for bad options.
   */
  traces(query: { limit?: number; userId?: string | null } = {}): TraceSummary[] {
    const q = parseOrThrow(
      QuerySchema,
      query,
      ErrorCode.INVALID_INPUT,
      "query",
      "limit is a positive integer, userId a string or null.",
    );
    const out: TraceSummary[] = [];
    const ring = this.#ring;
    for (let i = 1; i <= ring.length && out.length < (q.limit ?? Infinity); i++) {
      const entry = ring[(this.#next - i + ring.length) % ring.length];
      if (entry === undefined) continue;
      const summary = summarise(entry);
      if (summary === null) continue;
      if (q.userId !== undefined && summary.userId !== q.userId) continue;
      out.push(summary);
    }
    return out;
  }

  /** One kept trace, whole, or `null` when it is not kept (never seen, or dropped). */
  trace(traceId: string): TraceDetail | null {
    if (typeof traceId !== "string" || !TRACE_ID.test(traceId)) return null;
    const entry = this.#traces.get(traceId);
    if (entry === undefined) return null;
    const spans = [...entry.ended, ...entry.open];
    const summary = summarise(entry);
    if (summary === null) return null;
    return {
      ...summary,
      spans: treeOrder(spans).map(([span, depth]) => spanView(span, depth)),
      events: entry.events.map((e) => ({
        name: e.name,
        timestampMs: e.timestampMs,
        spanId: e.spanId,
        requestId: e.requestId,
        attributes: e.attributes,
      })),
    };
  }

  /** Forgets every trace and resets the counters. */
  clear(): void {
    this.#traces.clear();
    this.#ring.length = 0;
    this.#next = 0;
    this.droppedTraces = this.droppedSpans = this.droppedEvents = 0;
  }

  #entry(traceId: string): Entry {
    let entry = this.#traces.get(traceId);
    if (entry === undefined) {
      const oldest = this.#ring[this.#next];
      if (oldest !== undefined) {
        this.#traces.delete(oldest.traceId);
        this.droppedTraces++;
      }
      entry = {
        traceId,
        ended: [],
        open: new Set(),
        events: [],
        droppedSpans: 0,
        droppedEvents: 0,
      };
      this.#traces.set(traceId, entry);
      this.#ring[this.#next] = entry;
      this.#next = (this.#next + 1) % this.maxTraces;
    }
    return entry;
  }
}

const ZERO: TokenUsage = Object.freeze({
  promptTokens: 0,
  completionTokens: 0,
  totalTokens: 0,
  costUsd: 0,
});

function summarise(entry: Entry): TraceSummary | null {
  const spans = [...entry.ended, ...entry.open];
  if (spans.length === 0) return null; // only events so far: nothing to show as a trace yet
  const ids = new Set(spans.map((s) => s.id));
  let root: Span | undefined;
  let start = Infinity;
  let end = -Infinity;
  let errors = 0;
  let p = 0;
  let c = 0;
  let t = 0;
  let cost = 0;
  for (const span of spans) {
    if (span.startMs < start) start = span.startMs;
    if (span.endMs !== null && span.endMs > end) end = span.endMs;
    if (span.status === "error") errors++;
    const isRoot = span.parentId === null || !ids.has(span.parentId);
    if (isRoot && (root === undefined || span.startMs < root.startMs)) root = span;
    const u = span.usage;
    p += u.promptTokens;
    c += u.completionTokens;
    t += u.totalTokens;
    cost += u.costUsd;
  }
  const top = root ?? spans[0]!;
  const open = !top.ended;
  return {
    traceId: entry.traceId,
    rootName: top.name,
    rootSpanId: top.id,
    startMs: start,
    durationMs: open ? null : end - start,
    status: open ? "open" : top.status === "error" ? "error" : "ok",
    errorCount: errors,
    userId: top.userId,
    sessionId: top.sessionId,
    usage:
      t === 0 && cost === 0
        ? ZERO
        : { promptTokens: p, completionTokens: c, totalTokens: t, costUsd: cost },
    spanCount: spans.length,
    openSpanCount: entry.open.size,
    eventCount: entry.events.length,
    droppedSpans: entry.droppedSpans,
    droppedEvents: entry.droppedEvents,
  };
}

/**
 * Spans depth-first, children under their parent by start time; spans with no kept parent are
 * roots. Iterative and visiting each span once, so that a deep tree cannot overflow the stack and
 * spans that claim each other as parents (ids from a worker are untrusted) cannot loop.
 */
function treeOrder(spans: readonly Span[]): [Span, number][] {
  const ids = new Set(spans.map((s) => s.id));
  const children = new Map<string | null, Span[]>();
  for (const span of spans) {
    const parent = span.parentId !== null && ids.has(span.parentId) ? span.parentId : null;
    let list = children.get(parent);
    if (list === undefined) children.set(parent, (list = []));
    list.push(span);
  }
  for (const list of children.values()) list.sort((a, b) => a.startMs - b.startMs);
  const out: [Span, number][] = [];
  const seen = new Set<Span>();
  const walk = (roots: readonly Span[]): void => {
    const stack: [Span, number][] = [];
    for (let i = roots.length - 1; i >= 0; i--) stack.push([roots[i]!, 0]);
    while (stack.length > 0) {
      const [span, depth] = stack.pop()!;
      if (seen.has(span)) continue;
      seen.add(span);
      out.push([span, depth]);
      const kids = children.get(span.id) ?? [];
      for (let i = kids.length - 1; i >= 0; i--) stack.push([kids[i]!, depth + 1]);
    }
  };
  walk(children.get(null) ?? []);
  // Spans only reachable through a cycle of parents: shown as roots rather than lost.
  if (out.length < spans.length) walk([...spans].sort((a, b) => a.startMs - b.startMs));
  return out;
}

function spanView(span: Span, depth: number): TraceDetailSpan {
  return {
    id: span.id,
    parentId: span.parentId,
    requestId: span.requestId,
    name: span.name,
    kind: span.kind,
    depth,
    startMs: span.startMs,
    endMs: span.endMs,
    durationMs: span.durationMs,
    status: !span.ended ? "open" : span.status === "error" ? "error" : "ok",
    error: span.error,
    attributes: span.attributes,
    usage: span.usage,
    totalUsage: span.totalUsage,
  };
}
