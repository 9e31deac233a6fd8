import { z } from "zod";

export const SPAN_ID = /^[0-9a-f]{16}$/;
export const TRACE_ID = /^[0-9a-f]{32}$/;

/** A trace id on the wire: 32 lowercase hex digits, not all zeros (W3C Trace Context). */
export const TraceIdSchema = z
  .string()
  .regex(/^(?!0{32}$)[0-9a-f]{32}$/, "must be 32 lowercase hex digits, not all zeros")
  .describe("W3C trace id: 32 lowercase hex digits, not all zeros.");
/** A span id on the wire: 16 lowercase hex digits, not all zeros (W3C Trace Context). */
export const SpanIdSchema = z
  .string()
  .regex(/^(?!0{16}$)[0-9a-f]{16}$/, "must be 16 lowercase hex digits, not all zeros")
  .describe("W3C span id: 16 lowercase hex digits, not all zeros.");
/**
 * A timestamp on the wire: RFC 3339 with `Z` or a numeric offset (`+00:00`), as other
 * implementations write it. This library always writes UTC with `Z` (`toISOString()`).
 */
export const TimestampSchema = z.iso
  .datetime({ offset: true })
  .describe("RFC 3339 timestamp with Z or a numeric offset.");

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
    span_id: SpanIdSchema,
    parent_id: SpanIdSchema.nullable().describe("The enclosing span; null for a root span."),
    trace_id: TraceIdSchema,
    request_id: z.string().min(1).max(128).describe("The request that recorded the span."),
    name: z.string().min(1).max(256).describe("What the work is, e.g. tools.call."),
    start_time: TimestampSchema,
    end_time: TimestampSchema.nullable().describe("null while the span is open."),
    duration_ms: z
      .number()
      .nonnegative()
      .nullable()
      .describe("Milliseconds from start to end; null while the span is open."),
    status: z.enum(["unset", "ok", "error"]).describe("unset while open, then ok or error."),
    error: z.string().nullable().describe("The error message of a failed span, else null."),
    attributes,
  })
  .strict()
  .meta({ id: "Span", description: "One timed unit of work within a trace." });
export type SpanWire = z.output<typeof SpanSchema>;

/** Wire schema of one structured event recorded on a context. */
export const EventSchema = z
  .object({
    name: z.string().min(1).max(256),
    timestamp: TimestampSchema,
    trace_id: TraceIdSchema,
    request_id: z.string().min(1).max(128),
    span_id: SpanIdSchema.nullable(),
    attributes,
  })
  .strict()
  .meta({ id: "Event", description: "A structured log event recorded during a request." });
export type EventWire = z.output<typeof EventSchema>;

export { attributes as AttributesSchema };
