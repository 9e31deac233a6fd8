import { z } from "zod";

export const SPAN_ID = /^[0-9a-f]{16}$/;
export const TRACE_ID = /^[0-9a-f]{32}$/;

const attributeValue = z.union([z.string(), z.number(), z.boolean()]);
/** Span and event attributes: flat, OpenTelemetry-compatible values. */
export type AttributeValue = z.infer<typeof attributeValue>;
export type Attributes = Record<string, AttributeValue>;
const attributes = z.record(z.string(), attributeValue);

export const SpanStatus = { UNSET: "unset", OK: "ok", ERROR: "error" } as const;
export type SpanStatus = (typeof SpanStatus)[keyof typeof SpanStatus];

/** Wire schema of one span of a trace (OpenTelemetry-compatible ids). */
export const SpanSchema = z
  .object({
    span_id: z.string().regex(SPAN_ID),
    parent_id: z.string().regex(SPAN_ID).nullable(),
    trace_id: z.string().regex(TRACE_ID),
    request_id: z.string().min(1).max(128),
    name: z.string().min(1).max(256),
    start_time: z.iso.datetime(),
    end_time: z.iso.datetime().nullable(),
    duration_ms: z.number().nonnegative().nullable(),
    status: z.enum(["unset", "ok", "error"]),
    error: z.string().nullable(),
    attributes,
  })
  .strict()
  .meta({ id: "Span", description: "One timed unit of work within a trace." });
export type SpanWire = z.output<typeof SpanSchema>;

/** Wire schema of one structured event recorded on a context. */
export const EventSchema = z
  .object({
    name: z.string().min(1).max(256),
    timestamp: z.iso.datetime(),
    trace_id: z.string().regex(TRACE_ID),
    request_id: z.string().min(1).max(128),
    span_id: z.string().regex(SPAN_ID).nullable(),
    attributes,
  })
  .strict()
  .meta({ id: "Event", description: "A structured log event recorded during a request." });
export type EventWire = z.output<typeof EventSchema>;

export { attributes as AttributesSchema };
