import { z } from "zod";
import { PermissionsSchema } from "./permissions.js";
import { SCOPES } from "./status.js";
import { SpanIdSchema, TimestampSchema, TraceIdSchema } from "./trace.js";
import { TokenUsageSchema } from "./usage.js";

/**
 * Wire schema of the serialisable part of an ExecContext: what crosses a process, container or
 * queue boundary. Spans, events, the stream sink and the abort signal stay in-process.
 */
export const ExecContextSchema = z
  .object({
    request_id: z
      .string()
      .min(1)
      .max(128)
      .describe("Unique per request; a delegated (child) request gets its own."),
    trace_id: TraceIdSchema,
    user_id: z.string().min(1).max(256).nullable().describe("Who is asking; null if anonymous."),
    session_id: z.string().min(1).max(256).nullable().describe("Conversation session, or null."),
    agent_name: z
      .string()
      .min(1)
      .max(256)
      .nullable()
      .describe("The agent this request runs for; null at the root."),
    depth: z.number().int().nonnegative().describe("Delegation depth: 0 at the root."),
    permissions: PermissionsSchema,
    memory_scope: z.enum(SCOPES).describe("Which identity memory is keyed by."),
    created_at: TimestampSchema.describe("When the request started."),
    timeout_at: TimestampSchema.nullable().describe("The deadline, or null for none."),
    span_id: SpanIdSchema.nullable().describe(
      "The span new spans nest under (e.g. the caller's, from a traceparent); null at the top.",
    ),
    token_usage: TokenUsageSchema,
  })
  .strict()
  .meta({
    id: "ExecContext",
    description: "The serialisable part of an execution context.",
  });
export type ExecContextWire = z.output<typeof ExecContextSchema>;
