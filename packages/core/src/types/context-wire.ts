import { z } from "zod";
import { PermissionsSchema } from "./permissions.js";
import { SCOPES } from "./status.js";
import { TRACE_ID } from "./trace.js";
import { TokenUsageSchema } from "./usage.js";

/**
 * Wire schema of the serialisable part of an ExecContext: what crosses a process, container or
 * queue boundary. Spans, events, the stream sink and the abort signal stay in-process.
 */
export const ExecContextSchema = z
  .object({
    request_id: z.string().min(1).max(128),
    trace_id: z.string().regex(TRACE_ID),
    user_id: z.string().min(1).max(256).nullable(),
    session_id: z.string().min(1).max(256).nullable(),
    agent_name: z.string().min(1).max(256).nullable(),
    depth: z.number().int().nonnegative(),
    permissions: PermissionsSchema,
    memory_scope: z.enum(SCOPES),
    created_at: z.iso.datetime(),
    timeout_at: z.iso.datetime().nullable(),
    span_id: z
      .string()
      .regex(/^[0-9a-f]{16}$/)
      .nullable(),
    token_usage: TokenUsageSchema,
  })
  .strict()
  .meta({
    id: "ExecContext",
    description: "The serialisable part of an execution context.",
  });
export type ExecContextWire = z.output<typeof ExecContextSchema>;
