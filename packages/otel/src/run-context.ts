import {
  TraceFlags,
  type Context,
  type Span as OtelSpan,
  type SpanContext,
  type SpanStatus,
} from "@opentelemetry/api";
import type { Span } from "@nerva/core/context";

// OpenTelemetry's key of the active span (`createContextKey` makes `Symbol.for(description)`):
// what `trace.getSpan(ctx)` reads and `trace.setSpan(ctx, span)` writes.
const SPAN_KEY = Symbol.for("OpenTelemetry Context Key SPAN");

/**
 * A running Nerva span as OpenTelemetry's active span: non-recording (Nerva records it), like
 * the `NonRecordingSpan` that `trace.setSpanContext` makes, but its span context is made when
 * first asked for. The span's ids are drawn lazily: a handler under which nothing reads the
 * active span (no instrumentation, no app span) never draws them in the request.
 */
class ActiveNervaSpan implements OtelSpan {
  readonly #span: Span;
  #context: SpanContext | null = null;

  constructor(span: Span) {
    this.#span = span;
  }

  spanContext(): SpanContext {
    const span = this.#span;
    return (this.#context ??= {
      traceId: span.traceId,
      spanId: span.id,
      traceFlags: span.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
      isRemote: false,
    });
  }
  setAttribute(): this {
    return this;
  }
  setAttributes(): this {
    return this;
  }
  addEvent(): this {
    return this;
  }
  addLink(): this {
    return this;
  }
  addLinks(): this {
    return this;
  }
  setStatus(_status: SpanStatus): this {
    return this;
  }
  updateName(): this {
    return this;
  }
  end(): void {}
  isRecording(): boolean {
    return false;
  }
  recordException(): void {}
}

/**
 * An OpenTelemetry `Context`: `parent` with one more value. `trace.setSpan(parent, span)` would
 * copy the parent's values into a new Map; a layer keeps a reference and looks up the chain
 * (contexts are immutable, so it reads what the copy would hold). `setValue` and `deleteValue`
 * add a layer, as `BaseContext` returns a new context.
 */
class ContextLayer implements Context {
  readonly #parent: Context;
  readonly #key: symbol;
  readonly #value: unknown;

  constructor(parent: Context, key: symbol, value: unknown) {
    this.#parent = parent;
    this.#key = key;
    this.#value = value;
  }

  getValue(key: symbol): unknown {
    return key === this.#key ? this.#value : this.#parent.getValue(key);
  }
  setValue(key: symbol, value: unknown): Context {
    return new ContextLayer(this, key, value);
  }
  deleteValue(key: symbol): Context {
    return new ContextLayer(this, key, undefined);
  }
}

/**
 * `parent` with a running Nerva span as its active span: a {@link ContextLayer} whose value, the
 * {@link ActiveNervaSpan}, is made when first read (under a handler that nothing instruments,
 * never: one object per switch instead of two).
 */
class SpanLayer implements Context {
  readonly #parent: Context;
  readonly #span: Span;
  #active: ActiveNervaSpan | null = null;

  constructor(parent: Context, span: Span) {
    this.#parent = parent;
    this.#span = span;
  }

  getValue(key: symbol): unknown {
    if (key !== SPAN_KEY) return this.#parent.getValue(key);
    return (this.#active ??= new ActiveNervaSpan(this.#span));
  }
  setValue(key: symbol, value: unknown): Context {
    return new ContextLayer(this, key, value);
  }
  deleteValue(key: symbol): Context {
    return new ContextLayer(this, key, undefined);
  }
}

/** `parent` with `span` as its active span: what `trace.setSpanContext` makes, in one object. */
export function withActiveSpan(parent: Context, span: Span): Context {
  return new SpanLayer(parent, span);
}
