import { z } from "zod";

export const SPAN_ID = /^[0-9a-f]{16}$/;
export const TRACE_ID = /^[0-9a-f]{32}$/;

/** A trace id on the wire: 32 lowercase hex digits, not all zeros (W3C Trace Context). */
export const TraceIdSchema = z
  .string()
  .regex(/^(?!0{32}$)[0-9a-f]{32}$/, "must be 32 lowercase hex digits, not all zeros")
  .describe("W3C trace id: 32 lowercase hex digits, not all zeros.");
/** A span id as this library writes it: 16 lowercase hex digits, not all zeros (W3C). */
export const SpanIdSchema = z
  .string()
  .regex(/^(?!0{16}$)[0-9a-f]{16}$/, "must be 16 lowercase hex digits, not all zeros")
  .describe("W3C span id: 16 lowercase hex digits, not all zeros.");

/**
 * A span id as the wire may carry it. Other implementations use other forms (the Python one
 * writes 32-digit UUID hex and may use a request id as a parent), so reading accepts any
 * non-empty id; this library still writes W3C span ids.
 */
export const WireSpanIdSchema = z
  .string()
  .min(1)
  .max(128)
  .describe("Span id: any non-empty id; this implementation writes 16 lowercase hex digits (W3C).");

/**
 * A point in time on the wire: Unix time in seconds, with a fraction (as Nerva's published spec
 * writes it, e.g. Python's `time.time()`).
 */
export const UnixSecondsSchema = z
  .number()
  .nonnegative()
  .finite()
  .describe("Unix time in seconds, with a fraction.");

/** Epoch milliseconds → the wire's Unix seconds. */
export function toUnixSeconds(epochMs: number): number {
  return epochMs / 1000;
}

const attributeValue = z.union([z.string(), z.number(), z.boolean()]);
/** Span and event attributes in TypeScript: flat, OpenTelemetry-compatible values. */
export type AttributeValue = z.infer<typeof attributeValue>;
export type Attributes = Record<string, AttributeValue>;
const attributes = z.record(z.string(), attributeValue);
/** On the wire attribute values are strings, as the published spec types them. */
const wireAttributes = z
  .record(z.string(), z.string())
  .describe("Key-value metadata; values are strings on the wire.");

/** Attributes as the wire carries them: every value a string. */
export function attributesToWire(attrs: Readonly<Attributes>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key in attrs) out[key] = String(attrs[key]);
  return out;
}

export const SpanStatus = { UNSET: "unset", OK: "ok", ERROR: "error" } as const;
export type SpanStatus = (typeof SpanStatus)[keyof typeof SpanStatus];

/**
 * Wire schema of one span: the fields of Nerva's published spec (`span_id`, `name`, `parent_id`,
 * `started_at`, `ended_at`, `attributes`) plus optional extras this implementation writes and
 * others may ignore. Unknown fields are ignored when reading.
 */
export const SpanSchema = z
  .object({
    span_id: WireSpanIdSchema,
    name: z.string().min(1).max(256).describe("What the work is, e.g. tools.call."),
    parent_id: WireSpanIdSchema.nullable().describe("The enclosing span; null for a root span."),
    started_at: UnixSecondsSchema.describe("When the span started (Unix seconds)."),
    ended_at: UnixSecondsSchema.nullable()
      .optional()
      .describe("When the span ended (Unix seconds); null or absent while open."),
    attributes: wireAttributes,
    trace_id: TraceIdSchema.optional().describe("Extra: the trace the span belongs to."),
    request_id: z
      .string()
      .min(1)
      .max(128)
      .optional()
      .describe("Extra: the request that recorded the span."),
    status: z
      .enum(["unset", "ok", "error"])
      .optional()
      .describe("Extra: unset while open, then ok or error."),
    error: z.string().nullable().optional().describe("Extra: the error of a failed span."),
  })
  .meta({ id: "Span", description: "A timed segment of work within a request." });
export type SpanWire = z.output<typeof SpanSchema>;

/** Wire schema of one event: the published fields plus optional extras. */
export const EventSchema = z
  .object({
    timestamp: UnixSecondsSchema.describe("When it happened (Unix seconds)."),
    name: z.string().min(1).max(256).describe("What happened, e.g. policy.denied."),
    attributes: wireAttributes,
    trace_id: TraceIdSchema.optional().describe("Extra: the trace it belongs to."),
    request_id: z
      .string()
      .min(1)
      .max(128)
      .optional()
      .describe("Extra: the request that recorded it."),
    span_id: WireSpanIdSchema.nullable().optional().describe("Extra: the span it happened in."),
  })
  .meta({ id: "Event", description: "A point-in-time occurrence recorded within a context." });
export type EventWire = z.output<typeof EventSchema>;

export { attributes as AttributesSchema };
