import {
  TraceFlags,
  type Attributes,
  type HrTime,
  type Link,
  type SpanContext,
  type SpanKind,
  type SpanStatus,
} from "@opentelemetry/api";
import { hrTimeDuration, millisToHrTime, type InstrumentationScope } from "@opentelemetry/core";
import type { Resource } from "@opentelemetry/resources";
import type { ReadableSpan, TimedEvent } from "@opentelemetry/sdk-trace-base";
import type { ContextEvent, Span } from "@nerva/core/context";
import {
  operationOf,
  otelAttributes,
  otelKind,
  otelName,
  otelStatus,
  type MappingSettings,
} from "./mapping.js";

/** What every exported span of one sink shares. */
export interface ExportSettings extends MappingSettings {
  readonly resource: Resource;
  readonly scope: InstrumentationScope;
}

const NO_LINKS: Link[] = [];
const NO_EVENTS: TimedEvent[] = [];

/** What only some spans carry, in one object made only for them. */
export interface SpanExtras {
  /** Events recorded under the span. */
  readonly events?: readonly ContextEvent[];
  /** The MCP server a `tools.call` span reached. */
  readonly mcpServer?: string;
}

/** What the export reads, converted once. */
interface Converted {
  readonly attributes: Attributes;
  readonly startTime: HrTime;
  readonly endTime: HrTime;
}

/**
 * One ended Nerva span as the OpenTelemetry SDK's span processors and exporters read it: same
 * trace and span id. Made when the span ends, at the cost of one object of four fields (it is
 * also its own `spanContext()`, so a batch processor's sampled check allocates nothing and
 * formats no id); its name, attributes and times are converted on first read, which for a batch
 * processor is the export, off the request path (an SDK span would cost microseconds on it).
 */
export class NervaReadableSpan implements ReadableSpan, SpanContext {
  readonly #span: Span;
  readonly #settings: ExportSettings;
  /** The exported parent; `undefined`: the Nerva span's own (genai mode re-parents). */
  readonly #parent: Span | string | null | undefined;
  readonly #extras: SpanExtras | undefined;
  #converted: Converted | null = null;

  constructor(
    span: Span,
    settings: ExportSettings,
    parent: Span | string | null | undefined,
    extras: SpanExtras | undefined,
  ) {
    this.#span = span;
    this.#settings = settings;
    this.#parent = parent;
    this.#extras = extras;
  }

  /** The Nerva span this one was made from. */
  get source(): Span {
    return this.#span;
  }

  /** The exported parent: a span of this process, a remote parent's id, or none. */
  get exportedParent(): Span | string | null {
    const span = this.#span;
    return this.#parent === undefined ? (span.parentSpan ?? span.parentId) : this.#parent;
  }

  /** Events and the MCP server, when the span has any. */
  get extras(): SpanExtras | undefined {
    return this.#extras;
  }

  // ---- SpanContext: only sampled traces reach a processor (the sink drops the others).
  get traceId(): string {
    return this.#span.traceId;
  }
  get spanId(): string {
    return this.#span.id;
  }
  get traceFlags(): number {
    return TraceFlags.SAMPLED;
  }
  get isRemote(): boolean {
    return false;
  }

  spanContext(): SpanContext {
    return this;
  }

  // ---- ReadableSpan
  get parentSpanContext(): SpanContext | undefined {
    const span = this.#span;
    const parent = this.exportedParent;
    if (parent === null) return undefined;
    const remote = typeof parent === "string";
    return {
      traceId: span.traceId,
      spanId: remote ? parent : parent.id,
      traceFlags: TraceFlags.SAMPLED,
      isRemote: remote,
    };
  }

  get name(): string {
    return otelName(this.#span, operationOf(this.#span.name));
  }

  get kind(): SpanKind {
    return otelKind(this.#span, operationOf(this.#span.name));
  }

  get status(): SpanStatus {
    return otelStatus(this.#span);
  }

  get attributes(): Attributes {
    return this.#convert().attributes;
  }

  get startTime(): HrTime {
    return this.#convert().startTime;
  }

  get endTime(): HrTime {
    return this.#convert().endTime;
  }

  get duration(): HrTime {
    const c = this.#convert();
    return hrTimeDuration(c.startTime, c.endTime);
  }

  get events(): TimedEvent[] {
    const events = this.#extras?.events;
    if (events === undefined) return NO_EVENTS;
    return events.map((e) => ({
      name: e.name,
      time: millisToHrTime(e.timestampMs),
      attributes: { ...e.attributes },
    }));
  }

  get links(): Link[] {
    return NO_LINKS;
  }
  get ended(): boolean {
    return true;
  }
  get droppedAttributesCount(): number {
    return 0;
  }
  get droppedEventsCount(): number {
    return 0;
  }
  get droppedLinksCount(): number {
    return 0;
  }

  get resource(): Resource {
    return this.#settings.resource;
  }

  get instrumentationScope(): InstrumentationScope {
    return this.#settings.scope;
  }

  #convert(): Converted {
    if (this.#converted !== null) return this.#converted;
    const span = this.#span;
    return (this.#converted = {
      attributes: otelAttributes(
        span,
        operationOf(span.name),
        this.#settings,
        this.#extras?.mcpServer,
      ),
      startTime: millisToHrTime(span.startMs),
      endTime: millisToHrTime(span.endMs ?? span.startMs),
    });
  }
}
