import { z } from "zod";
import { ErrorCode, NervaError, parseOrThrow } from "../errors.js";
import { Permissions, type PermissionsInit } from "../types/permissions.js";
import { SCOPES, type Scope } from "../types/status.js";
import { MetadataSchema } from "../types/context-wire.js";
import { TRACE_ID } from "../types/trace.js";
import type { Span, SpanKind } from "./span.js";
import { isTraceSink, type TraceSink } from "./trace-sink.js";

/**
 * Where primitives push output as it is produced (tokens, progress). `push` may return a promise
 * to apply backpressure; producers await it.
 *
 * @example
 * const chunks: string[] = [];
 * const ctx = ExecContext.create({ stream: { push: (c) => void chunks.push(c) } });
 */
export interface StreamSink {
  push(chunk: string): void | Promise<void>;
  /**
   * A chunk of the model's reasoning, apart from the answer's text (a durable run records it as
   * an `output.delta` of kind `reasoning`, shown as reasoning parts by the protocol adapters).
   * Optional: a producer falls back to `push` on a sink without it.
   */
  pushReasoning?(chunk: string): void | Promise<void>;
}

/** Options of {@link ExecContext.create}. */
export interface ExecContextOptions {
  userId?: string | null;
  sessionId?: string | null;
  /** Defaults to {@link Permissions.UNRESTRICTED}: the app that builds a context grants what it wants. */
  permissions?: Permissions | PermissionsInit;
  /** Defaults to `"session"`. */
  memoryScope?: Scope;
  /** Deadline in seconds from now. Omitted or `null`: no deadline of its own. */
  timeoutSeconds?: number | null;
  /** Supply to join an existing request; generated otherwise. */
  requestId?: string;
  /** 32 lowercase hex digits; supply to join an existing trace. Wins over `traceparent`. */
  traceId?: string;
  /** A W3C `traceparent` header: the context joins the caller's trace. Malformed values are ignored. */
  traceparent?: string | null;
  stream?: StreamSink | null;
  /** String tags for policy conditions and routing (e.g. `{ tenant: "acme" }`); inherited by children. */
  metadata?: Readonly<Record<string, string>>;
  /** Told of every span and event of this context's tree (children and forks included). */
  traceSink?: TraceSink | null;
}

/** Options of {@link ExecContext.fromWire}. */
export interface FromWireOptions {
  stream?: StreamSink | null;
  /** Told of every span and event of the rebuilt context's tree. */
  traceSink?: TraceSink | null;
}

/** Options of {@link ExecContext.startSpan}. */
export interface StartSpanOptions {
  /** Defaults to `"internal"`; `"client"` for a call to another process or service. */
  kind?: SpanKind;
}

/** Options of {@link ExecContext.toWire}. */
export interface ToWireOptions {
  /**
   * Include the spans and events of this context's tree. Off by default: what crosses a process
   * or queue boundary is identity and lifecycle, and the arrays are sent empty.
   */
  includeTrace?: boolean;
}

/** Options of {@link ExecContext.child}. */
export interface ChildOptions {
  /** The child's own deadline; it never ends later than the parent's. */
  timeoutSeconds?: number;
  /** The span new spans of the child nest under (e.g. a `delegate` span). */
  span?: Span;
}

/** Options of {@link ExecContext.fork}. */
export interface ForkOptions extends ChildOptions {
  /** The agent running in the fork (used by `agent` memory scope and delegation cycle checks). */
  agentName?: string;
  /** Replaces the stream sink (`null` silences it, e.g. for the inner steps of a chain). */
  stream?: StreamSink | null;
  /**
   * Called once if the fork times out or is cancelled (not when it is disposed). Arms the deadline
   * timer at once, so a runtime can race a handler against it without an AbortSignal listener.
   */
  onEnd?: (reason: NervaError) => void;
}

const OptionsSchema = z
  .object({
    userId: z.string().min(1).max(256).nullable().optional(),
    sessionId: z.string().min(1).max(256).nullable().optional(),
    permissions: z.unknown().optional(),
    memoryScope: z.enum(SCOPES).optional(),
    timeoutSeconds: z.number().positive().finite().nullable().optional(),
    requestId: z.string().min(1).max(128).optional(),
    traceId: z
      .string()
      .regex(TRACE_ID, "must be 32 lowercase hex digits")
      .refine((s) => !/^0+$/.test(s), "must not be all zeros")
      .optional(),
    traceparent: z.string().nullable().optional(),
    metadata: MetadataSchema.optional(),
    stream: z
      .custom<StreamSink>(
        (v) => typeof v === "object" && v !== null && typeof (v as StreamSink).push === "function",
        "must be an object with a push(chunk) method",
      )
      .nullable()
      .optional(),
    traceSink: z
      .custom<TraceSink>(
        isTraceSink,
        "must be a TraceSink (an object with an onSpanEnd(span) method)",
      )
      .nullable()
      .optional(),
  })
  .strict();

const COMMON_KEYS: ReadonlySet<string> = new Set([
  "userId",
  "sessionId",
  "permissions",
  "memoryScope",
  "timeoutSeconds",
  "requestId",
  "traceparent",
  "stream",
  "traceSink",
]);
const SCOPE_NAMES: ReadonlySet<string> = new Set(SCOPES);
const isName = (v: unknown, max: number): boolean =>
  typeof v === "string" && v.length >= 1 && v.length <= max;

/**
 * The options a server passes on every request (identity, a Permissions value, deadline, ids),
 * checked by hand with the same rules as OptionsSchema: zod's cost is felt at that rate. Anything
 * else (traceId, metadata, a PermissionsInit, a stream, a bad value) goes through zod, which
 * also writes the error messages.
 */
function isCommonOptions(v: unknown): v is z.output<typeof OptionsSchema> {
  if (typeof v !== "object" || v === null || Object.getPrototypeOf(v) !== Object.prototype) {
    return false;
  }
  const o = v as Record<string, unknown>;
  for (const key in o) if (!COMMON_KEYS.has(key)) return false;
  return (
    (o.userId === undefined || o.userId === null || isName(o.userId, 256)) &&
    (o.sessionId === undefined || o.sessionId === null || isName(o.sessionId, 256)) &&
    (o.permissions === undefined || o.permissions instanceof Permissions) &&
    (o.memoryScope === undefined || SCOPE_NAMES.has(o.memoryScope as string)) &&
    (o.timeoutSeconds === undefined ||
      o.timeoutSeconds === null ||
      (typeof o.timeoutSeconds === "number" &&
        o.timeoutSeconds > 0 &&
        Number.isFinite(o.timeoutSeconds))) &&
    (o.requestId === undefined || isName(o.requestId, 128)) &&
    (o.traceparent === undefined || o.traceparent === null || typeof o.traceparent === "string") &&
    (o.stream === undefined || o.stream === null) &&
    (o.traceSink === undefined || o.traceSink === null || isTraceSink(o.traceSink))
  );
}

const FIX_CREATE =
  "See ExecContextOptions: userId/sessionId strings, memoryScope one of user|session|agent|global, timeoutSeconds > 0.";

export function checkSeconds(value: unknown, label: string): number {
  if (typeof value !== "number" || !(value > 0) || !Number.isFinite(value)) {
    throw new NervaError(
      ErrorCode.INVALID_OPTIONS,
      `Invalid ${label}: must be a positive finite number of seconds (got ${String(value)}).`,
      { issues: [{ path: label, message: "must be a positive finite number" }] },
    );
  }
  return value;
}

/** Validated options of `ExecContext.create`: a hand-checked fast path, zod for the rest. */
export function parseCreateOptions(options: ExecContextOptions): z.output<typeof OptionsSchema> {
  return isCommonOptions(options)
    ? options
    : parseOrThrow(OptionsSchema, options, ErrorCode.INVALID_OPTIONS, "options", FIX_CREATE);
}

/** The Permissions value an options object asks for (a Permissions, an init, or unrestricted). */
export function permissionsOf(value: unknown): Permissions {
  if (value === undefined) return Permissions.UNRESTRICTED;
  if (value instanceof Permissions) return value;
  return Permissions.create(value as PermissionsInit);
}
