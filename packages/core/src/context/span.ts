import { newSpanId } from "./ids.js";
import { addSpanUsage, spanUsageSnapshot, type SpanUsageTotals, type UsageDelta } from "./usage.js";
import type { Identity } from "./wire.js";
import type { SpanUsage } from "../types/usage.js";
import {
  attributesToWire,
  toUnixSeconds,
  type Attributes,
  type AttributeValue,
  type SpanStatus,
  type SpanWire,
} from "../types/trace.js";

// Read once: `timeOrigin` is fixed for the process, and the global `performance` is a getter.
// Together they were most of the cost of a clock reading, and spans take two each.
const perf = performance;
const timeOrigin = perf.timeOrigin;

/** Wall-clock milliseconds with sub-millisecond precision. */
export function nowMs(): number {
  return timeOrigin + perf.now();
}

/** What {@link Span.measured} needs of a span measured in another process, already bounded. */
export interface MeasuredSpanInit {
  /** 16 lowercase hex digits, not all zeros, unique in the trace. */
  readonly id: string;
  readonly name: string;
  readonly kind: SpanKind;
  /** Epoch milliseconds. */
  readonly startMs: number;
  readonly attributes: Attributes | null;
}

/** What a span stands for, as OpenTelemetry's SpanKind: work of this process, or a call out of it. */
export const SpanKind = { INTERNAL: "internal", CLIENT: "client", SERVER: "server" } as const;
export type SpanKind = (typeof SpanKind)[keyof typeof SpanKind];

/**
 * What a span nests under: a span of this process, the id of a remote span (from a `traceparent`
 * or a context that crossed the wire), or nothing at the top of a trace.
 */
export type SpanParent = Span | string | null;

/** A span's usage, made when its first tokens are recorded: its own, and its subtree's. */
interface UsageCell {
  own: SpanUsageTotals | null;
  total: SpanUsageTotals | null;
}

/** The id of a {@link SpanParent}. */
export function spanParentId(parent: SpanParent): string | null {
  return parent === null || typeof parent === "string" ? parent : parent.id;
}

/**
 * One timed unit of work. Started with `ctx.startSpan(name)` (or `ctx.span(name, fn)`), ended
 * exactly once with `end()`; later calls to `end()` are ignored. The context's trace sink, if
 * any, is told when it starts and when it ends.
 *
 * Token usage recorded while a span is current (`ctx.recordTokens`) is its own `usage`, and adds
 * to the `totalUsage` of it and of every ancestor span of this process. Identity (`userId`,
 * `sessionId`, `traceId`) is read from the tree the span belongs to, never copied per span.
 *
 * The id is drawn when first read (most spans of a busy server with no trace sink are never
 * serialised); once read it never changes. Create spans with `ctx.startSpan`: the constructor's
 * parameters are internal and may change.
 *
 * @example
 * const span = ctx.startSpan("db.query", { table: "orders" });
 * try { await query(); span.end(); } catch (e) { span.end("error", String(e)); throw e; }
 */
export class Span {
  #id: string | null = null;
  readonly #parent: SpanParent;
  readonly #tree: Identity;
  readonly requestId: string;
  readonly name: string;
  readonly kind: SpanKind;
  readonly startMs: number;
  #endMs: number | null = null;
  #status: SpanStatus = "unset";
  #error: string | null = null;
  #attributes: Attributes | null;
  // One field for both totals, null on the spans that never see tokens (most of them): every
  // field is paid by every span of every request, sink or no sink.
  #usage: UsageCell | null = null;

  constructor(
    parent: SpanParent,
    tree: Identity,
    requestId: string,
    name: string,
    attributes: Attributes | undefined,
    kind: SpanKind = "internal",
    startMs?: number,
  ) {
    this.#parent = parent;
    this.#tree = tree;
    this.requestId = requestId;
    this.name = name;
    this.kind = kind;
    this.startMs = startMs ?? nowMs();
    // Object.assign, not a spread: on V8 (Node 20) adding keys to a spread copy later (setAttribute)
    // costs ~1 µs per key, against ~50 ns for an assigned copy.
    this.#attributes = attributes === undefined ? null : Object.assign({}, attributes);
  }

  /** 16 lowercase hex digits, unique within the trace. */
  get id(): string {
    return (this.#id ??= newSpanId());
  }

  /** 32 lowercase hex digits, shared by every span of the trace. */
  get traceId(): string {
    return this.#tree.traceId;
  }

  /** The id of the span this one nests under, or `null` at the top of the trace. */
  get parentId(): string | null {
    return spanParentId(this.#parent);
  }

  /** The span this one nests under when it is a span of this process, else `null`. */
  get parentSpan(): Span | null {
    return this.#parent instanceof Span ? this.#parent : null;
  }

  /** True when this span's parent is not a span of this process (top of a trace, or remote). */
  get isLocalRoot(): boolean {
    return !(this.#parent instanceof Span);
  }

  /** The user of the request tree this span belongs to. */
  get userId(): string | null {
    return this.#tree.userId;
  }
  /** The session of the request tree this span belongs to. */
  get sessionId(): string | null {
    return this.#tree.sessionId;
  }
  /** The sampled flag of the trace (from the caller's `traceparent`; `true` by default). */
  get sampled(): boolean {
    return this.#tree.sampled;
  }

  /** Tokens and cost recorded while this span was current (not its children's). */
  get usage(): SpanUsage {
    return spanUsageSnapshot(this.#usage === null ? null : this.#usage.own);
  }
  /** Tokens and cost of this span and every span below it in this process. */
  get totalUsage(): SpanUsage {
    return spanUsageSnapshot(this.#usage === null ? null : this.#usage.total);
  }

  #cell(): UsageCell {
    return (this.#usage ??= { own: null, total: null });
  }

  /**
   * Adds usage spent while this span was current: its own usage, and the subtree totals of it and
   * every ancestor span of this process. Called by `ctx.recordTokens`.
   * @internal
   */
  addUsage(d: UsageDelta): void {
    const cell = this.#cell();
    cell.own = addSpanUsage(cell.own, d);
    cell.total = addSpanUsage(cell.total, d);
    for (let up = this.parentSpan; up !== null; up = up.parentSpan) {
      const c = up.#cell();
      c.total = addSpanUsage(c.total, d);
    }
    if (this.#endMs === null) {
      if (d.model !== undefined) this.setAttribute("model", d.model);
      if (d.provider !== undefined) this.setAttribute("provider", d.provider);
    }
  }

  get endMs(): number | null {
    return this.#endMs;
  }
  get status(): SpanStatus {
    return this.#status;
  }
  get error(): string | null {
    return this.#error;
  }
  get ended(): boolean {
    return this.#endMs !== null;
  }
  /** Milliseconds from start to end, or `null` while the span is open. */
  get durationMs(): number | null {
    return this.#endMs === null ? null : this.#endMs - this.startMs;
  }
  get attributes(): Readonly<Attributes> {
    return this.#attributes ?? {};
  }

  /** Sets one attribute; ignored once the span has ended. */
  setAttribute(key: string, value: AttributeValue): this {
    if (this.#endMs === null) (this.#attributes ??= {})[key] = value;
    return this;
  }

  /** Ends the span with `status` (default `ok`). Only the first call counts. */
  end(status: "ok" | "error" = "ok", error?: string): void {
    if (this.#endMs !== null) return;
    this.#endMs = nowMs();
    this.#status = status;
    if (error !== undefined) this.#error = error;
    this.#tree.sink?.spanEnd(this);
  }

  /**
   * A span measured in another process (a worker's, reported in a `span` frame), nested under
   * `parent`, a span of this process, in its trace. `init` must already be bounded and its id
   * valid (16 lowercase hex digits, not all zeros). Started, not ended: end it with
   * {@link endAt}. Used by `ExecContext.adoptSpan`.
   * @internal
   */
  static measured(parent: Span, requestId: string, init: MeasuredSpanInit): Span {
    const span = new Span(
      parent,
      parent.#tree,
      requestId,
      init.name,
      undefined,
      init.kind,
      init.startMs,
    );
    span.#id = init.id;
    span.#attributes = init.attributes;
    return span;
  }

  /**
   * Ends a span measured elsewhere at `endMs` (not now) with `status`. Only the first end counts.
   * @internal
   */
  endAt(endMs: number, status: "ok" | "error", error: string | null): void {
    if (this.#endMs !== null) return;
    this.#endMs = endMs;
    this.#status = status;
    this.#error = error;
    this.#tree.sink?.spanEnd(this);
  }

  /**
   * Moves up to `wanted` of `from`'s own usage to this span's own usage, and adds what moved to
   * the subtree totals of this span and of its ancestors below `from` (whose totals, like those
   * above it, already counted it). So a request's usage is never counted twice: a worker's usage
   * is charged once (its `usage` frames, on the invocation span), and a span the worker reports
   * only says which part of it was spent where. Each count moves at most what `from` has.
   * Returns what moved.
   * @internal
   */
  takeUsage(from: Span, wanted: SpanUsageTotals): SpanUsage {
    const have = from.#usage === null ? null : from.#usage.own;
    if (have === null) return spanUsageSnapshot(null);
    const d: UsageDelta = {
      p: Math.min(wanted.p, have.p),
      c: Math.min(wanted.c, have.c),
      t: Math.min(wanted.t, have.t),
      cost: Math.min(wanted.cost, have.cost),
      cached: Math.min(wanted.cached, have.cached),
      reasoning: Math.min(wanted.reasoning, have.reasoning),
      model: undefined,
      provider: undefined,
    };
    have.p -= d.p;
    have.c -= d.c;
    have.t -= d.t;
    have.cost -= d.cost;
    have.cached -= d.cached;
    have.reasoning -= d.reasoning;
    const cell = this.#cell();
    cell.own = addSpanUsage(cell.own, d);
    cell.total = addSpanUsage(cell.total, d);
    for (let up = this.parentSpan; up !== null && up !== from; up = up.parentSpan) {
      const c = up.#cell();
      c.total = addSpanUsage(c.total, d);
    }
    return spanUsageSnapshot(d);
  }

  /** The wire form (published spec fields plus `trace_id`, `request_id`, `status`, `error`). */
  toWire(): SpanWire {
    return {
      span_id: this.id,
      name: this.name,
      parent_id: this.parentId,
      started_at: toUnixSeconds(this.startMs),
      ended_at: this.#endMs === null ? null : toUnixSeconds(this.#endMs),
      attributes: attributesToWire(this.attributes),
      trace_id: this.traceId,
      request_id: this.requestId,
      status: this.#status,
      error: this.#error,
    };
  }

  toJSON(): SpanWire {
    return this.toWire();
  }
}

/** Marks spans across copies of this package (its ES module and CommonJS builds, two versions). */
const SPAN_BRAND = Symbol.for("nerva.span");
Object.defineProperty(Span.prototype, SPAN_BRAND, { value: true });

/**
 * True when `value` is a Span, made by this copy of `@nerva/core` or by another one loaded beside
 * it (an app importing the ES module build while a bridge `require`s the CommonJS one): trace
 * sinks read spans through their public getters, so one from another copy exports the same.
 *
 * @example
 * onSpanEnd(item) { if (isSpan(item)) queue.push(item); }
 */
export function isSpan(value: unknown): value is Span {
  return (
    value instanceof Span ||
    (typeof value === "object" &&
      value !== null &&
      (value as { [SPAN_BRAND]?: unknown })[SPAN_BRAND] === true)
  );
}
