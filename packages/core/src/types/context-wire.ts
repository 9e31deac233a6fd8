import { z } from "zod";
import { PermissionsSchema } from "./permissions.js";
import { SCOPES } from "./status.js";
import {
  EventSchema,
  WireSpanIdSchema,
  SpanSchema,
  TraceIdSchema,
  UnixSecondsSchema,
} from "./trace.js";
import { TokenUsageSchema } from "./usage.js";

/** Metadata tags: string keys and string values, as the published spec has them. */
export const MetadataSchema = z
  .record(z.string().min(1).max(256), z.string().max(4096))
  .describe("String tags for policy conditions and routing.");

/**
 * Wire schema of the serialisable part of an ExecContext: the fields of Nerva's published spec
 * plus optional extras this implementation writes (`agent_name`, `depth`, `span_id`) and other
 * implementations may ignore. Unknown fields are ignored when reading. The stream sink and the
 * abort signal never cross a boundary.
 */
export const ExecContextSchema = z
  .object({
    request_id: z
      .string()
      .min(1)
      .max(128)
      .describe("Unique per request; a delegated (child) request gets its own."),
    trace_id: TraceIdSchema.describe("Groups related requests into one trace."),
    user_id: z.string().min(1).max(256).nullable().describe("Who is asking; null if anonymous."),
    session_id: z.string().min(1).max(256).nullable().describe("Conversation session, or null."),
    permissions: PermissionsSchema,
    memory_scope: z.enum(SCOPES).describe("Which identity memory is keyed by."),
    spans: z.array(SpanSchema).describe("Timed work segments recorded so far (may be empty)."),
    events: z
      .array(EventSchema)
      .describe("Point-in-time occurrences recorded so far (may be empty)."),
    token_usage: TokenUsageSchema,
    created_at: UnixSecondsSchema.describe("When the request started (Unix seconds)."),
    timeout_at: UnixSecondsSchema.nullable()
      .optional()
      .describe("The deadline (Unix seconds); null or absent for none."),
    cancelled: z.boolean().describe("Whether cancellation has been signalled."),
    metadata: MetadataSchema,
    agent_name: z
      .string()
      .min(1)
      .max(256)
      .nullable()
      .optional()
      .describe("Extra: the agent this request runs for; null at the root."),
    depth: z
      .number()
      .int()
      .nonnegative()
      .optional()
      .describe("Extra: delegation depth, 0 at the root."),
    span_id: WireSpanIdSchema.nullable()
      .optional()
      .describe("Extra: the span new work of this context nests under."),
    sampled: z
      .boolean()
      .optional()
      .describe("Extra: the trace's sampled flag (W3C traceparent flag 01); absent means sampled."),
  })
  .meta({
    id: "ExecContext",
    description: "The serialisable part of an execution context.",
  });
export type ExecContextWire = z.output<typeof ExecContextSchema>;
