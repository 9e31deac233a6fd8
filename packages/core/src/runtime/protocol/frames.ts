import { z } from "zod";
import { AgentInputSchema, AgentResultSchema } from "../../types/agent.js";
import { ExecContextSchema } from "../../types/context-wire.js";

/**
 * Version of the framed worker protocol. A worker announces it in its `ready` frame; a host
 * refuses a worker that speaks another version.
 */
export const PROTOCOL_VERSION = 1;

const id = z.string().min(1).max(128);
/**
 * Frames a worker sends may omit `id`: a process that serves one invocation at a time (an
 * executable handler, a pooled worker) has only one invocation it can mean.
 */
const optionalId = id.optional();
const count = z.number().int().nonnegative();

// ---- host → worker --------------------------------------------------------------------------

/** Run `handler` on `input` under `context`. */
export const InvokeFrameSchema = z
  .object({
    type: z.literal("invoke"),
    id,
    handler: z.string().min(1).max(128),
    /** Where the worker finds the handler's code (a file path for the Node worker); worker-specific. */
    module: z.string().min(1).max(4096).nullable().default(null),
    input: AgentInputSchema,
    context: ExecContextSchema,
    /** Whether the caller has a stream sink: `chunk` frames are only useful when it does. */
    stream: z.boolean().default(false),
  })
  .strict();

/** Stop invocation `id`: the handler's context is cancelled (its signal aborts). */
export const CancelFrameSchema = z
  .object({ type: z.literal("cancel"), id, reason: z.string().max(4096).default("cancelled") })
  .strict();

/** The answer to a `delegate` frame. */
export const DelegateResultFrameSchema = z
  .object({
    type: z.literal("delegate_result"),
    id,
    call_id: id,
    result: AgentResultSchema,
  })
  .strict();

/** Finish what is running, then exit with code 0. */
export const ShutdownFrameSchema = z.object({ type: z.literal("shutdown") }).strict();

/** Every frame a host sends to a worker. */
export const HostFrameSchema = z.discriminatedUnion("type", [
  InvokeFrameSchema,
  CancelFrameSchema,
  DelegateResultFrameSchema,
  ShutdownFrameSchema,
]);

// ---- worker → host --------------------------------------------------------------------------

/** Sent once, when the worker can take `invoke` frames. */
export const ReadyFrameSchema = z
  .object({
    type: z.literal("ready"),
    protocol: z.number().int().positive(),
    pid: z.number().int().positive().nullable().default(null),
    /** Free text naming the worker implementation, e.g. `node v20.20.2`. */
    runtime: z.string().max(256).default("unknown"),
  })
  .strict();

/** One piece of streamed output, in order. */
export const ChunkFrameSchema = z
  .object({ type: z.literal("chunk"), id: optionalId, text: z.string() })
  .strict();

/** Token usage the handler recorded since its last `usage` frame (a delta, not a total). */
export const UsageFrameSchema = z
  .object({
    type: z.literal("usage"),
    id: optionalId,
    prompt_tokens: count.default(0),
    completion_tokens: count.default(0),
    /** Defaults to prompt + completion. */
    total_tokens: count.optional(),
    cost_usd: z.number().nonnegative().finite().default(0),
  })
  .strict();

/** Ask the host to delegate to another agent; the host answers with `delegate_result`. */
export const DelegateFrameSchema = z
  .object({
    type: z.literal("delegate"),
    id: optionalId,
    call_id: id,
    handler: z.string().min(1).max(128),
    input: AgentInputSchema,
  })
  .strict();

/** The outcome of invocation `id`. Missing fields take AgentResult defaults; `handler` is ignored. */
export const ResultFrameSchema = z
  .object({
    type: z.literal("result"),
    id: optionalId,
    result: AgentResultSchema.partial().strict(),
  })
  .strict();

/** The worker could not process a frame (malformed, unknown invocation...). */
export const ErrorFrameSchema = z
  .object({ type: z.literal("error"), id: optionalId, message: z.string().max(65_536) })
  .strict();

/** Every frame a worker sends to its host. */
export const WorkerFrameSchema = z.discriminatedUnion("type", [
  ReadyFrameSchema,
  ChunkFrameSchema,
  UsageFrameSchema,
  DelegateFrameSchema,
  ResultFrameSchema,
  ErrorFrameSchema,
]);

/** A frame from host to worker, as validated (defaults filled). */
export type HostFrame = z.output<typeof HostFrameSchema>;
/** A frame from host to worker, as written (defaulted fields may be omitted). */
export type HostFrameInput = z.input<typeof HostFrameSchema>;
/** A frame from worker to host, as validated (defaults filled). */
export type WorkerFrame = z.output<typeof WorkerFrameSchema>;
/** A frame from worker to host, as written (defaulted fields may be omitted). */
export type WorkerFrameInput = z.input<typeof WorkerFrameSchema>;
export type InvokeFrame = z.output<typeof InvokeFrameSchema>;
export type ResultFrame = z.output<typeof ResultFrameSchema>;
export type DelegateFrame = z.output<typeof DelegateFrameSchema>;
export type UsageFrame = z.output<typeof UsageFrameSchema>;
/** An AgentInput as it goes into a frame. */
export type AgentInputWire = z.input<typeof AgentInputSchema>;

/**
 * Every frame schema by name, for documentation and for generating JSON Schema.
 *
 * @example
 * const parsed = protocolSchemas.WorkerFrame.safeParse(JSON.parse(line));
 */
export const protocolSchemas = {
  HostFrame: HostFrameSchema,
  WorkerFrame: WorkerFrameSchema,
} as const;
