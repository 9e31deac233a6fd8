// The host side of `span` frames: spans measured in a worker join the caller's trace under the
// invocation's `runtime.invoke` span. A worker is untrusted, so everything it says is bounded
// here: ids, parents, sizes, counts and times (docs/protocol.md, "Spans from workers").
import type { ExecContext } from "../../context/exec-context.js";
import { newSpanId } from "../../context/ids.js";
import { SpanKind, nowMs, type Span } from "../../context/span.js";
import type { SpanUsageTotals } from "../../context/usage.js";
import { ContextKey } from "../../context/local.js";
import type { Attributes } from "../../types/trace.js";
import type { WorkerEventWire, WorkerSpanWire } from "./frames.js";

/**
 * The bounds the host applies to the spans of one invocation (docs/protocol.md).
 *
 * @example
 * if (sent >= WORKER_SPAN_LIMITS.maxSpans) dropped++; // a worker that keeps to the host's limit
 */
export const WORKER_SPAN_LIMITS = Object.freeze({
  /** Spans kept per invocation; the rest are counted in one `worker.spans_dropped` event. */
  maxSpans: 1000,
  /** Longer names are cut. */
  maxNameChars: 256,
  /** Attributes kept per span (the first ones, in the order sent). */
  maxAttributes: 64,
  /** Longer attribute keys are cut. */
  maxAttributeKeyChars: 256,
  /** Longer string attribute values, and longer errors, are cut. */
  maxValueChars: 4096,
  /** Events kept per invocation; the rest are counted in one `worker.events_dropped` event. */
  maxEvents: 1000,
});

/**
 * Name of the event recorded (on the invocation's span, attributes `handler`, `count`, `limit`)
 * when spans of an invocation were dropped.
 *
 * @example
 * const dropped = ctx.events.filter((e) => e.name === SPANS_DROPPED_EVENT);
 */
export const SPANS_DROPPED_EVENT = "worker.spans_dropped";

/**
 * Name of the event recorded (on the invocation's span, attributes `handler`, `count`, `limit`)
 * when events of an invocation were dropped.
 *
 * @example
 * const dropped = ctx.events.filter((e) => e.name === EVENTS_DROPPED_EVENT);
 */
export const EVENTS_DROPPED_EVENT = "worker.events_dropped";

const VALID_ID = /^(?!0{16}$)[0-9a-f]{16}$/;
const KINDS: ReadonlySet<string> = new Set(Object.values(SpanKind));

/** Span ids that workers reported in one request tree (across its invocations). */
const kReportedIds = new ContextKey<Set<string>>("nerva.worker-span-ids");

/** A reported event, bounded, waiting for the span it names. */
interface PendingEvent {
  readonly name: string;
  readonly timestampMs: number;
  readonly attributes: Attributes;
}

/** A reported span, bounded, waiting for its parent or being adopted. */
interface Pending {
  readonly id: string;
  readonly name: string;
  readonly kind: SpanKind;
  readonly startMs: number;
  readonly endMs: number;
  readonly status: "ok" | "error";
  readonly error: string | null;
  readonly attributes: Attributes | null;
  readonly usage: SpanUsageTotals | null;
}

function cut(text: string, max: number): string {
  return text.length <= max ? text : text.slice(0, max);
}

/** A name cut to the limit; an empty one reads `(unnamed)`. */
function boundedName(name: string): string {
  const cutName = cut(name, WORKER_SPAN_LIMITS.maxNameChars);
  return cutName === "" ? "(unnamed)" : cutName;
}

/** Appends `value` to the list of `key`. */
function pushTo<V>(map: Map<string, V[]>, key: string, value: V): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}

function clamp(value: number, lo: number, hi: number): number {
  return value < lo ? lo : value > hi ? hi : value;
}

/**
 * The first attributes of `attrs`, keys and string values cut. Past the limit, the last kept
 * slot says how many were left out (`nerva.attributes_dropped`), so a span never has more.
 */
function boundedAttributes(
  attrs: Readonly<Record<string, string | number | boolean>>,
): Attributes | null {
  const max = WORKER_SPAN_LIMITS.maxAttributes;
  let out: Attributes | null = null;
  let kept = 0;
  let last = "";
  let dropped = 0;
  for (const key in attrs) {
    if (kept >= max) {
      dropped++;
      continue;
    }
    const value = attrs[key] as string | number | boolean;
    out ??= {};
    last = cut(key, WORKER_SPAN_LIMITS.maxAttributeKeyChars);
    out[last] = typeof value === "string" ? cut(value, WORKER_SPAN_LIMITS.maxValueChars) : value;
    kept++;
  }
  if (out !== null && dropped > 0) {
    delete out[last];
    out["nerva.attributes_dropped"] = dropped + 1;
  }
  return out;
}

function usageOf(u: WorkerSpanWire["usage"]): SpanUsageTotals | null {
  if (u === undefined) return null;
  const t = u.total_tokens ?? u.prompt_tokens + u.completion_tokens;
  if (t === 0 && u.prompt_tokens === 0 && u.completion_tokens === 0 && u.cost_usd === 0) {
    return null;
  }
  return {
    p: u.prompt_tokens,
    c: u.completion_tokens,
    t,
    cost: u.cost_usd,
    cached: u.cached_input_tokens,
    reasoning: u.reasoning_tokens,
  };
}

/**
 * The spans one invocation's worker reports (`span` frames), made into real spans of the
 * caller's context under the invocation's span:
 *
 * - trace: always the invocation's (a reported `trace_id` is ignored);
 * - ids: a span id that is not 16 lowercase hex digits (not all zeros), or that the trace already
 *   has, is replaced by a fresh one, and every reference to it by the same one;
 * - parents: a parent that is the invocation's span or another span of this invocation is kept;
 *   one that never arrives (or none, or a cycle) becomes the invocation's span. Spans arrive as
 *   they end, children before parents: a span waits for its parent until the invocation ends;
 * - sizes: names cut to 256 characters, the first 64 attributes kept (keys cut to 256, string
 *   values and errors to 4,096), at most 1,000 spans (the rest counted in one
 *   `worker.spans_dropped` event on the invocation's span, recorded when it ends);
 * - times: clamped to the invocation's window (its start, and its end or now);
 * - usage: moved from the invocation span's own usage, never added (see `Span.takeUsage`);
 * - events (`event` frames): bounded like span attributes, at most 1,000 (the rest counted in one
 *   `worker.events_dropped` event), times clamped; one on the invocation's span is recorded at
 *   once, one on a span of this invocation once that span is adopted (at the latest when the
 *   invocation ends), one on any other span on the invocation's span.
 *
 * The sink hears of each adopted span as of a local one: start, then end, parents before their
 * children start and after they end. A runtime of your own that speaks the worker protocol makes
 * one per invocation, with the context it gave the handler (whose current span is the
 * invocation's), and calls `finish()` when the invocation is over.
 *
 * @example
 * const spans = new WorkerSpans(scoped, "my_agent");
 * decoder = new FrameDecoder({ schema: WorkerFrameSchema, onError, onFrame: (frame) => {
 *   if (frame.type === "span") spans.add(frame.span);
 *   if (frame.type === "event") spans.addEvent(frame.event);
 *   if (frame.type === "result") { spans.addDropped(frame.spans_dropped, frame.events_dropped); spans.finish(); }
 * } });
 */
export class WorkerSpans {
  readonly #ctx: ExecContext;
  readonly #invocation: Span | null;
  readonly #handler: string;
  /** Reported id → the id used here. */
  readonly #ids = new Map<string, string>();
  /** Ids of this invocation's spans (adopted or waiting). */
  readonly #used = new Set<string>();
  readonly #adopted = new Map<string, Span>();
  /** Spans waiting for their parent, by the parent's id. */
  readonly #waiting = new Map<string, Pending[]>();
  /** The request tree's reported ids (a request-local slot), once looked up. */
  #treeIds: Set<string> | null = null;
  #accepted = 0;
  #dropped = 0;
  /** Events naming a span not adopted yet, by that span's id here. */
  readonly #pendingEvents = new Map<string, PendingEvent[]>();
  #eventsAccepted = 0;
  #eventsDropped = 0;
  #finished = false;

  constructor(scoped: ExecContext, handler: string) {
    this.#ctx = scoped;
    this.#invocation = scoped.currentSpan;
    this.#handler = handler;
  }

  /** Spans dropped so far (over the limit, reported by the worker, or after the end). */
  get dropped(): number {
    return this.#dropped;
  }

  /** Adds one reported span (as validated by `WorkerSpanSchema`). Never throws on its content. */
  add(wire: WorkerSpanWire): void {
    const inv = this.#invocation;
    if (this.#finished || inv === null || this.#accepted >= WORKER_SPAN_LIMITS.maxSpans) {
      this.#dropped++;
      return;
    }
    this.#accepted++;
    const lo = inv.startMs;
    const hi = inv.endMs ?? nowMs();
    const startMs = clamp(wire.started_at * 1000, lo, hi);
    const endMs = clamp(wire.ended_at * 1000, startMs, hi);
    const error = wire.error == null ? null : cut(wire.error, WORKER_SPAN_LIMITS.maxValueChars);
    const status =
      wire.status === "ok" || wire.status === "error"
        ? wire.status
        : error === null
          ? "ok"
          : "error";
    const attributes = boundedAttributes(wire.attributes);
    const span: Pending = {
      id: this.#ownId(wire.span_id),
      name: boundedName(wire.name),
      kind: wire.kind !== undefined && KINDS.has(wire.kind) ? (wire.kind as SpanKind) : "internal",
      startMs,
      endMs,
      status,
      error,
      attributes,
      usage: usageOf(wire.usage),
    };
    const parentId =
      wire.parent_id === null || wire.parent_id === wire.span_id
        ? null
        : this.#parentRef(wire.parent_id);
    const parent = parentId === null ? inv : (this.#adopted.get(parentId) ?? null);
    if (parent !== null) {
      this.#adoptTree(span, parent);
      return;
    }
    pushTo(this.#waiting, parentId as string, span);
  }

  /** Events dropped so far (over the limit, reported by the worker, or after the end). */
  get droppedEvents(): number {
    return this.#eventsDropped;
  }

  /** Adds one reported event (as validated by `WorkerEventSchema`). Never throws on its content. */
  addEvent(wire: WorkerEventWire): void {
    const inv = this.#invocation;
    if (this.#finished || inv === null || this.#eventsAccepted >= WORKER_SPAN_LIMITS.maxEvents) {
      this.#eventsDropped++;
      return;
    }
    this.#eventsAccepted++;
    const event: PendingEvent = {
      name: boundedName(wire.name),
      timestampMs: clamp(wire.at * 1000, inv.startMs, inv.endMs ?? nowMs()),
      attributes: boundedAttributes(wire.attributes) ?? {},
    };
    // The id the span it names has (or will have) here, mapped as a parent reference is.
    const spanId = wire.span_id === null ? null : this.#parentRef(wire.span_id);
    if (spanId === null || this.#adopted.has(spanId)) {
      this.#record(event, spanId ?? inv.id);
      return;
    }
    pushTo(this.#pendingEvents, spanId, event);
  }

  /**
   * Counts spans and events the worker itself left out (`spans_dropped` and `events_dropped` of
   * its result frame).
   */
  addDropped(spans: number, events = 0): void {
    if (Number.isSafeInteger(spans) && spans > 0) this.#dropped += spans;
    if (Number.isSafeInteger(events) && events > 0) this.#eventsDropped += events;
  }

  /**
   * The invocation is over: spans still waiting for a parent that never came nest under the
   * invocation's span, and the drop count (if any) is recorded. Later spans are only counted.
   */
  finish(): void {
    if (this.#finished) return;
    this.#finished = true;
    const inv = this.#invocation;
    if (inv !== null && this.#waiting.size > 0) {
      const waitingIds = new Set<string>();
      for (const list of this.#waiting.values()) for (const s of list) waitingIds.add(s.id);
      // Parents that never arrived first; what is left waits on itself in a cycle.
      for (const [parentId, list] of [...this.#waiting]) {
        if (waitingIds.has(parentId) || !this.#waiting.has(parentId)) continue;
        this.#waiting.delete(parentId);
        for (const s of list) this.#adoptTree(s, inv);
      }
      for (const [parentId, list] of [...this.#waiting]) {
        if (!this.#waiting.delete(parentId)) continue;
        for (const s of list) this.#adoptTree(s, inv);
      }
    }
    if (inv !== null) {
      // The spans these name never came: they happened, so they land on the invocation's span.
      for (const list of this.#pendingEvents.values())
        for (const e of list) this.#record(e, inv.id);
      this.#pendingEvents.clear();
    }
    for (const [name, count, limit] of [
      [SPANS_DROPPED_EVENT, this.#dropped, WORKER_SPAN_LIMITS.maxSpans],
      [EVENTS_DROPPED_EVENT, this.#eventsDropped, WORKER_SPAN_LIMITS.maxEvents],
    ] as const) {
      if (count > 0) this.#ctx.event(name, { handler: this.#handler, count, limit });
    }
  }

  #record(e: PendingEvent, spanId: string): void {
    this.#ctx.adoptEvent({
      name: e.name,
      timestampMs: e.timestampMs,
      spanId,
      attributes: e.attributes,
    });
  }

  /** The id a reported span gets: its own when valid and new to the trace, else a fresh one. */
  #ownId(reported: string): string {
    let id = this.#ids.get(reported);
    if (id === undefined) {
      id = this.#mapNew(reported);
    } else if (this.#used.has(id)) {
      // A second span with the same id: references already mean the first one.
      id = this.#fresh();
    }
    this.#used.add(id);
    this.#reported().add(id);
    return id;
  }

  /** The id a parent reference means (the invocation's span's id is its own). */
  #parentRef(reported: string): string | null {
    const inv = this.#invocation as Span;
    if (reported === inv.id) return null;
    return this.#ids.get(reported) ?? this.#mapNew(reported);
  }

  #mapNew(reported: string): string {
    const own =
      VALID_ID.test(reported) &&
      reported !== (this.#invocation as Span).id &&
      !this.#reported().has(reported);
    const id = own ? reported : this.#fresh();
    this.#ids.set(reported, id);
    return id;
  }

  #fresh(): string {
    let id = newSpanId();
    while (this.#used.has(id) || this.#reported().has(id)) id = newSpanId();
    return id;
  }

  #reported(): Set<string> {
    return (this.#treeIds ??= this.#ctx.local(kReportedIds, () => new Set<string>()));
  }

  /**
   * Adopts `root` under `parent`, then whatever waited for it, depth first without recursion:
   * the sink hears each span start before its children and end after them.
   */
  #adoptTree(root: Pending, parent: Span): void {
    const inv = this.#invocation as Span;
    const stack: { pending: Pending; parent: Span; span: Span | null }[] = [
      { pending: root, parent, span: null },
    ];
    while (stack.length > 0) {
      const top = stack[stack.length - 1] as (typeof stack)[number];
      if (top.span !== null) {
        stack.pop();
        top.span.endAt(top.pending.endMs, top.pending.status, top.pending.error);
        continue;
      }
      const p = top.pending;
      const span = this.#ctx.adoptSpan(top.parent, p);
      top.span = span;
      this.#adopted.set(p.id, span);
      if (p.usage !== null) span.takeUsage(inv, p.usage);
      // Its events, between its start and its end, as a sink hears a local span's.
      const events = this.#pendingEvents.get(p.id);
      if (events !== undefined) {
        this.#pendingEvents.delete(p.id);
        for (const e of events) this.#record(e, p.id);
      }
      const children = this.#waiting.get(p.id);
      if (children === undefined) continue;
      this.#waiting.delete(p.id);
      for (let i = children.length - 1; i >= 0; i--) {
        stack.push({ pending: children[i] as Pending, parent: span, span: null });
      }
    }
  }
}
