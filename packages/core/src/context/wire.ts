import { ErrorCode, parseOrThrow } from "../errors.js";
import { checkJsonLimits, DEFAULT_JSON_LIMITS } from "../internal/json-limits.js";
import { Permissions } from "../types/permissions.js";
import type { Scope } from "../types/status.js";
import { ExecContextSchema, type ExecContextWire } from "../types/context-wire.js";
import { toUnixSeconds } from "../types/trace.js";
import { tokenUsageToWire } from "../types/usage.js";
import { eventToWire } from "./events.js";
import { newTraceId } from "./ids.js";
import type { ExecContext } from "./exec-context.js";
import type { GuardedSink } from "./trace-sink.js";

/**
 * What every context of one tree shares, never changed. A new trace's id is drawn when first
 * read: a request nothing reports (no trace sink, no log line, no wire form) never pays for it.
 */
export class Identity {
  #traceId: string | null;
  readonly userId: string | null;
  readonly sessionId: string | null;
  readonly permissions: Permissions;
  readonly memoryScope: Scope;
  readonly metadata: Readonly<Record<string, string>>;
  /** Where the tree's spans and events are reported (`traceSink`), or null. */
  readonly sink: GuardedSink | null;
  /** The trace's sampled flag (from the caller's traceparent; true by default). */
  readonly sampled: boolean;

  /** `traceId` null: a new trace, its id drawn on first read. */
  constructor(
    traceId: string | null,
    userId: string | null,
    sessionId: string | null,
    permissions: Permissions,
    memoryScope: Scope,
    metadata: Readonly<Record<string, string>>,
    sink: GuardedSink | null,
    sampled: boolean,
  ) {
    this.#traceId = traceId;
    this.userId = userId;
    this.sessionId = sessionId;
    this.permissions = permissions;
    this.memoryScope = memoryScope;
    this.metadata = metadata;
    this.sink = sink;
    this.sampled = sampled;
  }

  /** 32 lowercase hex digits, shared by every context and span of the trace. */
  get traceId(): string {
    return (this.#traceId ??= newTraceId());
  }
}

/** What a wire context restores: the arguments of the context it rebuilds. */
export interface RestoredContext {
  readonly id: Identity;
  readonly requestId: string;
  readonly depth: number;
  readonly agentName: string | null;
  readonly createdAt: number;
  readonly timeoutAt: number | null;
  readonly spanId: string | null;
  readonly usage: { p: number; c: number; t: number; cost: number } | null;
  readonly cancelled: boolean;
}

const FIX_WIRE = "Send the object produced by ctx.toWire() (snake_case fields).";

/**
 * Validates a context that crossed a process boundary. It comes from another process: its depth
 * and size are bounded before zod recurses into it. Throws INVALID_INPUT naming the bad field.
 */
export function parseContextWire(wire: unknown, sink: GuardedSink | null): RestoredContext {
  checkJsonLimits(wire, DEFAULT_JSON_LIMITS, ErrorCode.INVALID_INPUT, "context", FIX_WIRE);
  const w = parseOrThrow(ExecContextSchema, wire, ErrorCode.INVALID_INPUT, "context", FIX_WIRE);
  const u = w.token_usage;
  return {
    id: new Identity(
      w.trace_id,
      w.user_id,
      w.session_id,
      Permissions.fromWire(w.permissions),
      w.memory_scope,
      Object.freeze({ ...w.metadata }),
      sink,
      w.sampled ?? true,
    ),
    requestId: w.request_id,
    depth: w.depth ?? 0,
    agentName: w.agent_name ?? null,
    createdAt: Math.round(w.created_at * 1000),
    timeoutAt: w.timeout_at == null ? null : Math.round(w.timeout_at * 1000),
    spanId: w.span_id ?? null,
    usage:
      u.total_tokens > 0 || u.cost_usd > 0
        ? { p: u.prompt_tokens, c: u.completion_tokens, t: u.total_tokens, cost: u.cost_usd }
        : null,
    cancelled: w.cancelled,
  };
}

/** The wire form of `ctx` (see `ExecContext.toWire`). */
export function contextToWire(
  ctx: ExecContext,
  spanId: string | null,
  includeTrace: boolean,
): ExecContextWire {
  return {
    request_id: ctx.requestId,
    trace_id: ctx.traceId,
    user_id: ctx.userId,
    session_id: ctx.sessionId,
    permissions: ctx.permissions.toWire(),
    memory_scope: ctx.memoryScope,
    spans: includeTrace ? ctx.spans.map((span) => span.toWire()) : [],
    events: includeTrace ? ctx.events.map(eventToWire) : [],
    token_usage: tokenUsageToWire(ctx.tokenUsage),
    created_at: toUnixSeconds(ctx.createdAt),
    timeout_at: ctx.timeoutAt === null ? null : toUnixSeconds(ctx.timeoutAt),
    cancelled: ctx.isCancelled(),
    metadata: { ...ctx.metadata },
    agent_name: ctx.agentName,
    depth: ctx.depth,
    span_id: spanId,
    ...(ctx.sampled ? {} : { sampled: false }),
  };
}
