import {
  attributesToWire,
  toUnixSeconds,
  type Attributes,
  type EventWire,
} from "../types/trace.js";

/** A structured event recorded with `ctx.event()`. */
export interface ContextEvent {
  readonly name: string;
  readonly timestampMs: number;
  readonly traceId: string;
  readonly requestId: string;
  readonly spanId: string | null;
  readonly attributes: Readonly<Attributes>;
}

/**
 * An event in the wire format (Unix-seconds `timestamp`, string attributes, plus `trace_id`,
 * `request_id` and `span_id`).
 *
 * @example
 * const wire = ctx.events.map(eventToWire);
 */
export function eventToWire(event: ContextEvent): EventWire {
  return {
    timestamp: toUnixSeconds(event.timestampMs),
    name: event.name,
    attributes: attributesToWire(event.attributes),
    trace_id: event.traceId,
    request_id: event.requestId,
    span_id: event.spanId,
  };
}
