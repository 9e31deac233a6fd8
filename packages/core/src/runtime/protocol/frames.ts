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
    /** Part of `prompt_tokens` read from the provider's prompt cache. */
    cached_input_tokens: count.default(0),
    /** Part of `completion_tokens` spent on reasoning. */
    reasoning_tokens: count.default(0),
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
    /**
     * Spans of this invocation the worker did not send (it keeps to the host's limit of spans per
     * invocation): added to the count of the host's `worker.spans_dropped` event.
     */
    spans_dropped: count.default(0),
    /**
     * Events of this invocation the worker did not send (it keeps to the host's limit of events
     * per invocation): added to the count of the host's `worker.events_dropped` event.
     */
    events_dropped: count.default(0),
  })
  .strict();

/**
 * A span's own token usage (spent while it was current, not its children's). The host charges
 * usage from `usage` frames only: this says which span spent part of it (see {@link SpanFrameSchema}).
 */
export const WorkerSpanUsageSchema = z
  .object({
    prompt_tokens: count.default(0),
    completion_tokens: count.default(0),
    /** Defaults to prompt + completion. */
    total_tokens: count.optional(),
    cost_usd: z.number().nonnegative().finite().default(0),
    /** Part of `prompt_tokens` read from the provider's prompt cache. */
    cached_input_tokens: count.default(0),
    /** Part of `completion_tokens` spent on reasoning. */
    reasoning_tokens: count.default(0),
  })
  .strict();

const attributeValue = z.union([z.string(), z.number(), z.boolean()]);
/** A span's or an event's attributes (the host bounds them). */
const flatAttributes = z
  .record(z.string(), attributeValue)
  .default({})
  .describe(
    "Flat values; the first 64 are kept, keys cut to 256 characters, string values to 4096.",
  );

/**
 * One span that ended inside a worker. The schema checks types only: the host bounds the values
 * (ids, parents, name and attribute sizes, times, counts) by replacing, cutting or clamping them,
 * as docs/protocol.md describes. Unknown fields are ignored, so a Span as another implementation
 * writes it (`request_id`, `trace_id`, ...) is accepted.
 */
export const WorkerSpanSchema = z.object({
  span_id: z
    .string()
    .describe(
      "16 lowercase hex digits, not all zeros, unique in the trace; another id is replaced by a fresh one (and every reference to it too).",
    ),
  parent_id: z
    .string()
    .nullable()
    .describe(
      "The invocation's span (the context's span_id) or another span of this invocation; anything else nests under the invocation's span.",
    ),
  name: z.string().describe("What the work is; cut to 256 characters."),
  started_at: z.number().describe("Unix seconds; clamped to the invocation's time window."),
  ended_at: z
    .number()
    .describe("Unix seconds; clamped between started_at and the end of the invocation's window."),
  kind: z
    .string()
    .optional()
    .describe("internal (default), client or server; anything else reads as internal."),
  status: z
    .enum(["unset", "ok", "error"])
    .optional()
    .describe("ok or error; unset or absent reads as error when `error` is set, else ok."),
  error: z.string().nullable().optional().describe("The error of a failed span; cut to 4096."),
  attributes: flatAttributes,
  usage: WorkerSpanUsageSchema.optional().describe("The span's own token usage, if any."),
  trace_id: z.string().optional().describe("Ignored: the span joins the invocation's trace."),
});

/**
 * A span that ended inside the handler of invocation `id`. The host adds it to the caller's
 * context (`ctx.spans`, its trace sink) under the invocation's `runtime.invoke` span.
 */
export const SpanFrameSchema = z
  .object({
    type: z.literal("span"),
    id: optionalId,
    span: WorkerSpanSchema,
  })
  .strict()
  .meta({
    id: "SpanFrame",
    description:
      "Worker → host frame of the worker protocol: one span that ended inside a handler (docs/protocol.md).",
  });

/**
 * One event recorded inside a worker (`ctx.event(name, attributes)`). Like a span, it is checked
 * for types only and bounded by the host (docs/protocol.md, "Events from workers").
 */
export const WorkerEventSchema = z.object({
  name: z.string().describe("What happened; cut to 256 characters."),
  at: z.number().describe("Unix seconds; clamped to the invocation's time window."),
  span_id: z
    .string()
    .nullable()
    .describe(
      "The span it happened in: the invocation's span (the context's span_id) or a span of this invocation; anything else reads as the invocation's span.",
    ),
  attributes: flatAttributes,
});

/**
 * An event recorded inside the handler of invocation `id`. The host adds it to the caller's
 * context (`ctx.events`, its trace sink) on the span it names.
 */
export const EventFrameSchema = z
  .object({
    type: z.literal("event"),
    id: optionalId,
    event: WorkerEventSchema,
  })
  .strict()
  .meta({
    id: "EventFrame",
    description:
      "Worker → host frame of the worker protocol: one event recorded inside a handler (docs/protocol.md).",
  });

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
  SpanFrameSchema,
  EventFrameSchema,
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
export type SpanFrame = z.output<typeof SpanFrameSchema>;
/** A span as a `span` frame carries it, as validated (defaults filled). */
export type WorkerSpanWire = z.output<typeof WorkerSpanSchema>;
/** A span as a `span` frame carries it, as written (defaulted fields may be omitted). */
export type WorkerSpanWireInput = z.input<typeof WorkerSpanSchema>;
export type EventFrame = z.output<typeof EventFrameSchema>;
/** An event as an `event` frame carries it, as validated (defaults filled). */
export type WorkerEventWire = z.output<typeof WorkerEventSchema>;
/** An event as an `event` frame carries it, as written (defaulted fields may be omitted). */
export type WorkerEventWireInput = z.input<typeof WorkerEventSchema>;
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
