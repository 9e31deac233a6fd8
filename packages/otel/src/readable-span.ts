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
import type { ContextEvent, Span } from "@nerva/core";
import {
  operationOf,
  otelAttributes,
  otelKind,
  otelName,
  otelStatus,
  type GenAIOperation,
  type MappingSettings,
} from "./mapping.js";

/** What every exported span of one sink shares. */
export interface ExportSettings extends MappingSettings {
  readonly resource: Resource;
  readonly scope: InstrumentationScope;
}

const NO_LINKS: Link[] = [];
const NO_EVENTS: TimedEvent[] = [];

/**
 * One ended Nerva span as the OpenTelemetry SDK's span processors and exporters read it: same
 * trace and span id. Made when the span ends, at the cost of one small object; its name,
 * attributes and times are converted on first read, which for a batch processor is the
 * export, off the request path (an SDK span would cost microseconds on it).
 */
export class NervaReadableSpan implements ReadableSpan {
  readonly #span: Span;
  readonly #settings: ExportSettings;
  readonly #op: GenAIOperation | null;
  /** The exported parent: the Nerva parent, or (genai mode) the nearest kept ancestor. */
  readonly #parent: Span | string | null;
  readonly #mcpServer: string | undefined;
  #context: SpanContext | null = null;
  #attributes: Attributes | null = null;
  #startTime: HrTime | null = null;
  #endTime: HrTime | null = null;
  readonly #events: readonly ContextEvent[] | undefined;
  #timedEvents: TimedEvent[] | null = null;
  readonly links: Link[] = NO_LINKS;
  readonly ended = true;
  readonly droppedAttributesCount = 0;
  readonly droppedEventsCount: number;
  readonly droppedLinksCount = 0;

  constructor(
    span: Span,
    settings: ExportSettings,
    parent: Span | string | null,
    events: readonly ContextEvent[] | undefined,
    droppedEvents: number,
    mcpServer: string | undefined,
  ) {
    this.#span = span;
    this.#settings = settings;
    this.#op = operationOf(span.name);
    this.#parent = parent;
    this.#events = events;
    this.droppedEventsCount = droppedEvents;
    this.#mcpServer = mcpServer;
  }

  /** The Nerva span this one was made from. */
  get source(): Span {
    return this.#span;
  }

  spanContext(): SpanContext {
    return (this.#context ??= {
      traceId: this.#span.traceId,
      spanId: this.#span.id,
      // Only sampled traces reach a processor (the sink drops the others).
      traceFlags: TraceFlags.SAMPLED,
      isRemote: false,
    });
  }

  get parentSpanContext(): SpanContext | undefined {
    const parent = this.#parent;
    if (parent === null) return undefined;
    const remote = typeof parent === "string";
    return {
      traceId: this.#span.traceId,
      spanId: remote ? parent : parent.id,
      traceFlags: TraceFlags.SAMPLED,
      isRemote: remote,
    };
  }

  get name(): string {
    return otelName(this.#span, this.#op);
  }

  get kind(): SpanKind {
    return otelKind(this.#span, this.#op);
  }

  get status(): SpanStatus {
    return otelStatus(this.#span);
  }

  get attributes(): Attributes {
    return (this.#attributes ??= otelAttributes(
      this.#span,
      this.#op,
      this.#settings,
      this.#mcpServer,
    ));
  }

  get startTime(): HrTime {
    return (this.#startTime ??= millisToHrTime(this.#span.startMs));
  }

  get endTime(): HrTime {
    return (this.#endTime ??= millisToHrTime(this.#span.endMs ?? this.#span.startMs));
  }

  get duration(): HrTime {
    return hrTimeDuration(this.startTime, this.endTime);
  }

  get events(): TimedEvent[] {
    const events = this.#events;
    if (events === undefined) return NO_EVENTS;
    return (this.#timedEvents ??= events.map((e) => ({
      name: e.name,
      time: millisToHrTime(e.timestampMs),
      attributes: { ...e.attributes },
    })));
  }

  get resource(): Resource {
    return this.#settings.resource;
  }

  get instrumentationScope(): InstrumentationScope {
    return this.#settings.scope;
  }
}
