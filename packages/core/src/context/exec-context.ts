import { z } from "zod";
import { ErrorCode, NervaError, parseOrThrow } from "../errors.js";
import { Permissions, type PermissionsInit } from "../types/permissions.js";
import { SCOPES, type Scope } from "../types/status.js";
import { ExecContextSchema, MetadataSchema, type ExecContextWire } from "../types/context-wire.js";
import {
  TRACE_ID,
  attributesToWire,
  toUnixSeconds,
  type Attributes,
  type EventWire,
} from "../types/trace.js";
import {
  TokenUsageDeltaSchema,
  tokenUsageToWire,
  type TokenUsage,
  type TokenUsageDelta,
} from "../types/usage.js";
import { newRequestId, newTraceId, parseTraceparent } from "./ids.js";
import { ContextKey, type LocalSlots } from "./local.js";
import type { RunContext } from "../runs/run-context.js";
import { kRunContext } from "../runs/run-context-key.js";
import { Span, nowMs, spanParentId, type SpanParent } from "./span.js";

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
}

/** A structured event recorded with `ctx.event()`. */
export interface ContextEvent {
  readonly name: string;
  readonly timestampMs: number;
  readonly traceId: string;
  readonly requestId: string;
  readonly spanId: string | null;
  readonly attributes: Readonly<Attributes>;
}

/**
 * An event in the wire format (Unix-seconds `timestamp`, string attributes, plus `trace_id`,
 * `request_id` and `span_id`).
 *
 * @example
 * const wire = ctx.events.map(eventToWire);
 */
export function eventToWire(event: ContextEvent): EventWire {
  return {
    timestamp: toUnixSeconds(event.timestampMs),
    name: event.name,
    attributes: attributesToWire(event.attributes),
    trace_id: event.traceId,
    request_id: event.requestId,
    span_id: event.spanId,
  };
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

const MAX_TIMER_MS = 2_147_483_647;
/** Token counts are int32 in Nerva's wire format. */
const MAX_TOKENS = 2_147_483_647;
const LIVE = 0;
const CANCELLED = 1;
const TIMED_OUT = 2;
const DISPOSED = 3;
type State = typeof LIVE | typeof CANCELLED | typeof TIMED_OUT | typeof DISPOSED;

const NO_METADATA: Readonly<Record<string, string>> = Object.freeze({});

const ZERO_USAGE: TokenUsage = Object.freeze({
  promptTokens: 0,
  completionTokens: 0,
  totalTokens: 0,
  costUsd: 0,
});

/** What every context of one tree shares. */
interface Identity {
  readonly metadata: Readonly<Record<string, string>>;
  readonly traceId: string;
  readonly userId: string | null;
  readonly sessionId: string | null;
  readonly permissions: Permissions;
  readonly memoryScope: Scope;
}

/** Spans and events of one context tree, shared by a root context and all its descendants. */
interface Recorder {
  readonly spans: Span[];
  readonly events: ContextEvent[];
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
    (o.stream === undefined || o.stream === null)
  );
}

const FIX_CREATE =
  "See ExecContextOptions: userId/sessionId strings, memoryScope one of user|session|agent|global, timeoutSeconds > 0.";

function checkSeconds(value: unknown, label: string): number {
  if (typeof value !== "number" || !(value > 0) || !Number.isFinite(value)) {
    throw new NervaError(
      ErrorCode.INVALID_OPTIONS,
      `Invalid ${label}: must be a positive finite number of seconds (got ${String(value)}).`,
      { issues: [{ path: label, message: "must be a positive finite number" }] },
    );
  }
  return value;
}

/**
 * The one object that flows through every Nerva call: identity, permissions, memory scope, spans,
 * events, token usage, deadline and cancellation, and an optional stream sink.
 *
 * Contexts form a tree. `child(name)` starts a sub-request (delegation): same trace, identity,
 * permissions, scope and stream; new request id; depth + 1; a deadline never later than the
 * parent's. Cancelling a parent cancels its children; cancelling a child leaves the parent alone.
 *
 * Nothing is left behind: the AbortSignal and the deadline timer are created only when someone
 * reads `signal` (or a runtime waits on the deadline), and both are released when the context
 * times out, is cancelled or is disposed.
 *
 * @example
 * const ctx = ExecContext.create({ userId: "u1", sessionId: "s1", timeoutSeconds: 30 });
 * await runtime.invoke("my_agent", { message: "hello" }, ctx);
 * console.log(formatSpanTree(ctx.spans));
 * ctx.dispose();
 */
export class ExecContext {
  readonly requestId: string;
  readonly stream: StreamSink | null;
  /** 0 for a root context, parent's depth + 1 for a child. */
  readonly depth: number;
  /** The agent this context runs for (`null` at the root). */
  readonly agentName: string | null;
  /** Epoch milliseconds. */
  readonly createdAt: number;
  /** Epoch milliseconds of the deadline, or `null` when there is none. */
  readonly timeoutAt: number | null;

  /** Trace, identity, permissions and scope: one object shared by the whole tree, never changed. */
  readonly #id: Identity;
  /** Lifecycle parent: a cancelled parent cancels this context. */
  readonly #parent: ExecContext | null;
  /** Set on a fork: the context whose request (token usage) the fork belongs to. */
  readonly #base: ExecContext | null;
  /** Parent of new spans started on this context. */
  readonly #span: SpanParent;
  readonly #onEnd: ((reason: NervaError) => void) | null;
  #recorder: Recorder | null = null;
  /** Request-local slots; only the root of a tree holds them (see local()). */
  #locals: LocalSlots | null = null;
  #usage: { p: number; c: number; t: number; cost: number } | null = null;
  // Live children, as an intrusive doubly-linked list: O(1) to join and leave, no allocation.
  #firstChild: ExecContext | null = null;
  #prevSibling: ExecContext | null = null;
  #nextSibling: ExecContext | null = null;
  // Membership of the list of contexts waiting for their deadline timer (see #armSoon).
  #armPrev: ExecContext | null = null;
  #armNext: ExecContext | null = null;
  #controller: AbortController | null = null;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #state: State = LIVE;
  #reason: NervaError | null = null;

  // Positional on purpose: this runs for every invoke, and intermediate option objects showed up
  // as the main cost in profiles.
  private constructor(
    id: Identity,
    requestId: string,
    stream: StreamSink | null,
    depth: number,
    agentName: string | null,
    createdAt: number,
    timeoutAt: number | null,
    parent: ExecContext | null,
    base: ExecContext | null,
    span: SpanParent,
    onEnd: ((reason: NervaError) => void) | null,
  ) {
    this.#id = id;
    this.requestId = requestId;
    this.stream = stream;
    this.depth = depth;
    this.agentName = agentName;
    this.createdAt = createdAt;
    this.timeoutAt = timeoutAt;
    this.#parent = parent;
    this.#base = base;
    this.#span = span;
    this.#onEnd = onEnd;
    if (parent !== null) {
      if (parent.#state === CANCELLED || parent.#state === TIMED_OUT) {
        this.#state = parent.#state;
        this.#reason = parent.#reason;
      } else {
        const first = parent.#firstChild;
        this.#nextSibling = first;
        if (first !== null) first.#prevSibling = this;
        parent.#firstChild = this;
      }
    }
    if (onEnd !== null) {
      if (this.#reason !== null) onEnd(this.#reason);
      else if (timeoutAt !== null) ExecContext.#armSoon(this);
    }
  }

  /**
   * Contexts waiting for their deadline timer. Most handlers finish within the event-loop turn
   * that started them; arming their timers once per turn (one shared setImmediate) instead of
   * once per invocation saves a timer allocation per call. The deadline stays exact: the delay is
   * computed from `timeoutAt` when armed, and a handler that waits for I/O lets the loop reach
   * the check phase (and so its timer) before any I/O completes. A handler that never yields
   * would block any timer anyway.
   */
  static #armHead: ExecContext | null = null;
  static #armScheduled = false;

  static #armSoon(ctx: ExecContext): void {
    const head = ExecContext.#armHead;
    ctx.#armNext = head;
    if (head !== null) head.#armPrev = ctx;
    ExecContext.#armHead = ctx;
    if (ExecContext.#armScheduled) return;
    ExecContext.#armScheduled = true;
    setImmediate(ExecContext.#armPending);
  }

  static #armPending(this: void): void {
    ExecContext.#armScheduled = false;
    let ctx = ExecContext.#armHead;
    ExecContext.#armHead = null;
    while (ctx !== null) {
      const next: ExecContext | null = ctx.#armNext;
      ctx.#armPrev = ctx.#armNext = null;
      ctx.#arm();
      ctx = next;
    }
  }

  /** 32 lowercase hex digits, shared by every context of the trace. */
  get traceId(): string {
    return this.#id.traceId;
  }
  get userId(): string | null {
    return this.#id.userId;
  }
  get sessionId(): string | null {
    return this.#id.sessionId;
  }
  get permissions(): Permissions {
    return this.#id.permissions;
  }
  get memoryScope(): Scope {
    return this.#id.memoryScope;
  }
  /** String tags for policy conditions and routing; shared by the whole tree, immutable. */
  get metadata(): Readonly<Record<string, string>> {
    return this.#id.metadata;
  }

  /**
   * Creates a root context. Every option is validated; bad values throw `NervaError`
   * INVALID_OPTIONS naming the field.
   *
   * @example
   * const ctx = ExecContext.create({ userId: "u1", permissions: { allowedTools: ["search"] } });
   */
  static create(options: ExecContextOptions = {}): ExecContext {
    const o = isCommonOptions(options)
      ? options
      : parseOrThrow(OptionsSchema, options, ErrorCode.INVALID_OPTIONS, "options", FIX_CREATE);
    const permissions =
      o.permissions === undefined
        ? Permissions.UNRESTRICTED
        : o.permissions instanceof Permissions
          ? o.permissions
          : Permissions.create(o.permissions as PermissionsInit);
    const remote = o.traceId === undefined ? parseTraceparent(o.traceparent) : null;
    const createdAt = Date.now();
    const id: Identity = {
      traceId: o.traceId ?? remote?.traceId ?? newTraceId(),
      userId: o.userId ?? null,
      sessionId: o.sessionId ?? null,
      permissions,
      memoryScope: o.memoryScope ?? "session",
      metadata: o.metadata === undefined ? NO_METADATA : Object.freeze({ ...o.metadata }),
    };
    return new ExecContext(
      id,
      o.requestId ?? newRequestId(),
      o.stream ?? null,
      0,
      null,
      createdAt,
      o.timeoutSeconds == null ? null : createdAt + o.timeoutSeconds * 1000,
      null,
      null,
      remote?.parentSpanId ?? null,
      null,
    );
  }

  /**
   * Rebuilds a context from its wire form (e.g. inside a subprocess handler): same ids, identity,
   * permissions, deadline, depth and usage so far. Throws INVALID_INPUT naming the bad field.
   *
   * @example
   * const ctx = ExecContext.fromWire(JSON.parse(line).context);
   */
  static fromWire(wire: unknown, options: { stream?: StreamSink | null } = {}): ExecContext {
    const w = parseOrThrow(
      ExecContextSchema,
      wire,
      ErrorCode.INVALID_INPUT,
      "context",
      "Send the object produced by ctx.toWire() (snake_case fields).",
    );
    const id: Identity = {
      traceId: w.trace_id,
      userId: w.user_id,
      sessionId: w.session_id,
      permissions: Permissions.fromWire(w.permissions),
      memoryScope: w.memory_scope,
      metadata: Object.freeze({ ...w.metadata }),
    };
    const ctx = new ExecContext(
      id,
      w.request_id,
      options.stream ?? null,
      w.depth ?? 0,
      w.agent_name ?? null,
      Math.round(w.created_at * 1000),
      w.timeout_at == null ? null : Math.round(w.timeout_at * 1000),
      null,
      null,
      w.span_id ?? null,
      null,
    );
    const u = w.token_usage;
    if (u.total_tokens > 0 || u.cost_usd > 0) {
      ctx.#usage = {
        p: u.prompt_tokens,
        c: u.completion_tokens,
        t: u.total_tokens,
        cost: u.cost_usd,
      };
    }
    if (w.cancelled) ctx.cancel("cancelled before it crossed the wire");
    return ctx;
  }

  /**
   * The serialisable part of this context in the wire format of Nerva's published spec
   * (snake_case, Unix-seconds timestamps), plus `agent_name`, `depth` and `span_id`.
   * Spans and events are included only with `{ includeTrace: true }`.
   */
  toWire(options: ToWireOptions = {}): ExecContextWire {
    const trace = options.includeTrace === true;
    return {
      request_id: this.requestId,
      trace_id: this.traceId,
      user_id: this.userId,
      session_id: this.sessionId,
      permissions: this.permissions.toWire(),
      memory_scope: this.memoryScope,
      spans: trace ? this.spans.map((span) => span.toWire()) : [],
      events: trace ? this.events.map(eventToWire) : [],
      token_usage: tokenUsageToWire(this.tokenUsage),
      created_at: toUnixSeconds(this.createdAt),
      timeout_at: this.timeoutAt === null ? null : toUnixSeconds(this.timeoutAt),
      cancelled: this.#state === CANCELLED,
      metadata: { ...this.metadata },
      agent_name: this.agentName,
      depth: this.depth,
      span_id: spanParentId(this.#span),
    };
  }

  /**
   * A sub-request for agent `name` (what `runtime.delegate` uses): same trace, identity,
   * permissions, memory scope and stream; a new request id; depth + 1; its own deadline, never
   * later than this one's. Its token usage rolls up into this context.
   *
   * @example
   * const child = ctx.child("calendar_agent", { timeoutSeconds: 5 });
   */
  child(name: string, options: ChildOptions = {}): ExecContext {
    if (typeof name !== "string" || name.length === 0) {
      throw new NervaError(
        ErrorCode.INVALID_INPUT,
        "Invalid name: child(name) needs the non-empty name of the agent it runs for.",
        { issues: [{ path: "name", message: "must be a non-empty string" }] },
      );
    }
    return new ExecContext(
      this.#id,
      newRequestId(),
      this.stream,
      this.depth + 1,
      name,
      Date.now(),
      this.#deadline(options.timeoutSeconds, "options.timeoutSeconds"),
      this,
      null,
      options.span ?? this.#span,
      null,
    );
  }

  /**
   * A view of the same request with its own lifecycle: same request id, identity, usage and
   * spans, but an optional tighter deadline, a different current span and agent name. Runtimes
   * give one to each handler so that a handler timeout aborts the handler's `signal` without
   * cancelling the caller. Cancelling the fork never touches this context. Dispose it when done.
   *
   * @example
   * const scoped = ctx.fork({ span, timeoutSeconds: 2, agentName: "my_agent" });
   * try { await work(scoped.signal); } finally { scoped.dispose(); }
   */
  fork(options: ForkOptions = {}): ExecContext {
    return new ExecContext(
      this.#id,
      this.requestId,
      options.stream === undefined ? this.stream : options.stream,
      this.depth,
      options.agentName ?? this.agentName,
      this.createdAt,
      this.#deadline(options.timeoutSeconds, "options.timeoutSeconds"),
      this,
      this.#base ?? this,
      options.span ?? this.#span,
      options.onEnd ?? null,
    );
  }

  #deadline(timeoutSeconds: number | undefined, label: string, now = Date.now()): number | null {
    if (timeoutSeconds === undefined) return this.timeoutAt;
    const own = now + checkSeconds(timeoutSeconds, label) * 1000;
    return this.timeoutAt === null ? own : Math.min(own, this.timeoutAt);
  }

  // ---- lifecycle -------------------------------------------------------------------------

  /**
   * Aborts on deadline or cancellation, with a `NervaError` (TIMEOUT or CANCELLED) as reason.
   * Created on first access; the deadline timer is unref'd and cleared when the context ends.
   */
  get signal(): AbortSignal {
    if (this.#controller === null) {
      this.#controller = new AbortController();
      if (this.#state === CANCELLED || this.#state === TIMED_OUT) {
        this.#controller.abort(this.#reason);
      } else {
        this.#arm();
      }
    }
    return this.#controller.signal;
  }

  /** Milliseconds left before the deadline (`Infinity` without one, never negative). */
  remainingMs(): number {
    return this.timeoutAt === null ? Infinity : Math.max(0, this.timeoutAt - Date.now());
  }

  isTimedOut(): boolean {
    return (
      this.#state === TIMED_OUT ||
      (this.#state === LIVE && this.timeoutAt !== null && Date.now() >= this.timeoutAt)
    );
  }

  isCancelled(): boolean {
    return this.#state === CANCELLED;
  }

  /** Why the context ended (timeout or cancellation), or `null` while it runs. */
  get endReason(): NervaError | null {
    if (this.#state === LIVE && this.isTimedOut()) this.#expire();
    return this.#reason;
  }

  /** Throws the end reason if the context timed out or was cancelled. */
  throwIfEnded(): void {
    const reason = this.endReason;
    if (reason !== null) throw reason;
  }

  /**
   * Cancels this context and its descendants (never its parent). Aborts `signal` with a
   * `NervaError` CANCELLED carrying `reason`. Later calls are ignored.
   */
  cancel(reason?: string | Error): void {
    if (this.#state !== LIVE) return;
    const error =
      reason instanceof NervaError && reason.code === ErrorCode.CANCELLED
        ? reason
        : new NervaError(
            ErrorCode.CANCELLED,
            `Request ${this.requestId} was cancelled${reason === undefined ? "" : `: ${reason instanceof Error ? reason.message : reason}`}.`,
            reason instanceof Error ? { cause: reason } : {},
          );
    this.#end(CANCELLED, error);
  }

  /**
   * Marks the context finished: clears its timer, detaches it from its parent and cancels any
   * descendants still running. Does not abort `signal` of a context that completed normally.
   */
  dispose(): void {
    if (this.#state !== LIVE) return;
    this.#state = DISPOSED;
    this.#release();
    // Most contexts have no live child left: no closure is made for them.
    if (this.#firstChild !== null) {
      this.#detachChildren((child) => child.cancel(`parent request ${this.requestId} finished`));
    }
  }

  /** Empties the list of live children, handing each to `visit` once it is unlinked. */
  #detachChildren(visit: (child: ExecContext) => void): void {
    let child = this.#firstChild;
    this.#firstChild = null;
    while (child !== null) {
      const next: ExecContext | null = child.#nextSibling;
      child.#prevSibling = child.#nextSibling = null;
      visit(child);
      child = next;
    }
  }

  #arm(): void {
    if (this.#state !== LIVE || this.timeoutAt === null || this.#timer !== null) return;
    const delay = this.timeoutAt - Date.now();
    if (delay <= 0) {
      this.#expire();
      return;
    }
    this.#timer = setTimeout(
      () => {
        this.#timer = null;
        this.#expire();
      },
      Math.min(delay, MAX_TIMER_MS),
    );
    this.#timer.unref();
  }

  #expire(): void {
    if (this.#state !== LIVE || this.timeoutAt === null) return;
    if (Date.now() < this.timeoutAt) {
      this.#arm();
      return;
    }
    this.#end(
      TIMED_OUT,
      new NervaError(
        ErrorCode.TIMEOUT,
        `Request ${this.requestId}${this.agentName === null ? "" : ` (${this.agentName})`} reached its deadline.`,
      ),
    );
  }

  #end(state: typeof CANCELLED | typeof TIMED_OUT, reason: NervaError): void {
    this.#state = state;
    this.#reason = reason;
    this.#release();
    this.#controller?.abort(reason);
    this.#detachChildren((child) => {
      if (child.#state === LIVE) child.#end(state, reason);
    });
    this.#onEnd?.(reason);
  }

  #release(): void {
    if (this.#timer !== null) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    // Leave the list of contexts waiting for a timer, if in it.
    const armPrev = this.#armPrev;
    const armNext = this.#armNext;
    if (armPrev !== null) armPrev.#armNext = armNext;
    else if (ExecContext.#armHead === this) ExecContext.#armHead = armNext;
    if (armNext !== null) armNext.#armPrev = armPrev;
    this.#armPrev = this.#armNext = null;
    // Leave the parent's list of live children, if in it.
    const prev = this.#prevSibling;
    const next = this.#nextSibling;
    if (prev !== null) prev.#nextSibling = next;
    else if (this.#parent !== null && this.#parent.#firstChild === this)
      this.#parent.#firstChild = next;
    if (next !== null) next.#prevSibling = prev;
    this.#prevSibling = this.#nextSibling = null;
  }

  // ---- observability ---------------------------------------------------------------------

  static #rootOf(ctx: ExecContext): ExecContext {
    while (ctx.#parent !== null) ctx = ctx.#parent;
    return ctx;
  }

  #rec(): Recorder {
    return (ExecContext.#rootOf(this).#recorder ??= { spans: [], events: [] });
  }

  /** Every span of this context's tree (root, children and forks), in start order. */
  get spans(): readonly Span[] {
    return this.#rec().spans;
  }

  /** Every event of this context's tree, in order. */
  get events(): readonly ContextEvent[] {
    return this.#rec().events;
  }

  /** The span new spans of this context nest under (`null` at the top of a trace). */
  get currentSpanId(): string | null {
    return spanParentId(this.#span);
  }

  /**
   * Starts a span nested under this context's current span. End it with `span.end()`.
   *
   * @example
   * const span = ctx.startSpan("tools.call", { tool: "search" });
   */
  startSpan(name: string, attributes?: Attributes): Span {
    const span = new Span(this.#span, this.traceId, this.requestId, name, attributes);
    this.#rec().spans.push(span);
    return span;
  }

  /**
   * Runs `fn` inside a span. `fn` gets a fork of this context whose new spans nest under the span;
   * the span ends `ok` when `fn` resolves and `error` when it throws (the error is rethrown).
   *
   * @example
   * const rows = await ctx.span("db.query", async (inner) => query(inner.signal), { table: "t" });
   */
  async span<T>(
    name: string,
    fn: (ctx: ExecContext, span: Span) => Promise<T> | T,
    attributes?: Attributes,
  ): Promise<T> {
    const span = this.startSpan(name, attributes);
    const inner = this.fork({ span });
    try {
      const value = await fn(inner, span);
      span.end("ok");
      return value;
    } catch (err) {
      span.end("error", err instanceof Error ? err.message : String(err));
      throw err;
    } finally {
      inner.dispose();
    }
  }

  // ---- request-local slots ---------------------------------------------------------------

  /**
   * A typed key for a request-local slot. Keys are compared by identity: make each once, at
   * module level, and share the constant.
   *
   * @example
   * const kRefusals = ExecContext.key<PolicyDecision[]>("nerva.refusals");
   */
  static key<T>(name: string): ContextKey<T> {
    if (typeof name !== "string" || name.length === 0) {
      throw new NervaError(
        ErrorCode.INVALID_INPUT,
        'Invalid name: ExecContext.key(name) needs a non-empty name (e.g. "my-app.attempts").',
        { issues: [{ path: "name", message: "must be a non-empty string" }] },
      );
    }
    return new ContextKey<T>(name);
  }

  /**
   * Reads the request-local slot `key`. With `init`, a missing slot is created with `init()` and
   * stored. Slots live once per request tree: a child, a fork and the root see the same value, so
   * per-request bookkeeping (what a policy counted, refusals, a run's state) needs no event scan
   * and no global. They are dropped with the tree.
   *
   * @example
   * const seen = ctx.local(kSeen, () => new Set<string>());
   * seen.add("search_flights");
   */
  local<T>(key: ContextKey<T>): T | undefined;
  local<T>(key: ContextKey<T>, init: () => T): T;
  local<T>(key: ContextKey<T>, init?: () => T): T | undefined {
    const root = ExecContext.#rootOf(this);
    const slots = root.#locals;
    if (slots !== null && slots.has(key)) return slots.get(key) as T;
    if (init === undefined) return undefined;
    const value = init();
    (root.#locals ??= new Map()).set(key, value);
    return value;
  }

  /**
   * Sets the request-local slot `key` for the whole request tree (see {@link local}).
   *
   * @example
   * ctx.setLocal(kTenant, "acme");
   */
  setLocal<T>(key: ContextKey<T>, value: T): void {
    const root = ExecContext.#rootOf(this);
    (root.#locals ??= new Map()).set(key, value);
  }

  /** Records a structured event under the current span. */
  event(name: string, attributes: Attributes = {}): ContextEvent {
    const event: ContextEvent = Object.freeze({
      name,
      timestampMs: nowMs(),
      traceId: this.traceId,
      requestId: this.requestId,
      spanId: spanParentId(this.#span),
      attributes: Object.freeze({ ...attributes }),
    });
    this.#rec().events.push(event);
    return event;
  }

  /** Usage of this request and of every child request below it. */
  get tokenUsage(): TokenUsage {
    const u = (this.#base ?? this).#usage;
    if (u === null) return ZERO_USAGE;
    return Object.freeze({
      promptTokens: u.p,
      completionTokens: u.c,
      totalTokens: u.t,
      costUsd: u.cost,
    });
  }

  /**
   * Usage of the whole tree this context belongs to: the root request's usage, which includes
   * every child request. Budgets read it, so a delegated agent cannot escape its request's budget.
   *
   * @example
   * if (ctx.rootTokenUsage.costUsd > 0.5) throw new Error("over budget");
   */
  get rootTokenUsage(): TokenUsage {
    return ExecContext.#rootOf(this).tokenUsage;
  }

  /**
   * Adds one LLM call's usage to this context and every ancestor request. Throws
   * INVALID_INPUT on negative or non-integer token counts.
   *
   * @example
   * ctx.recordTokens({ promptTokens: 120, completionTokens: 30, costUsd: 0.0004 });
   */
  recordTokens(delta: TokenUsageDelta): void {
    const d = parseOrThrow(
      TokenUsageDeltaSchema,
      delta,
      ErrorCode.INVALID_INPUT,
      "usage",
      "Token counts are non-negative integers and costUsd a non-negative number.",
    );
    const p = d.promptTokens ?? 0;
    const c = d.completionTokens ?? 0;
    const t = d.totalTokens ?? p + c;
    const cost = d.costUsd ?? 0;
    // A fork's usage belongs to its base; a request's usage also counts for every ancestor request.
    // The outermost request holds the largest totals: refuse a delta that would take them past
    // what the wire format can carry (int32), before anything is added.
    let top: ExecContext = this.#base ?? this;
    for (let up = top.#parent; up !== null; up = top.#parent) top = up.#base ?? up;
    const u = top.#usage;
    if (u !== null && Math.max(u.p + p, u.c + c, u.t + t) > MAX_TOKENS) {
      throw new NervaError(
        ErrorCode.INVALID_INPUT,
        `Invalid usage: request ${top.requestId} would exceed ${MAX_TOKENS} tokens, the most the wire format carries. Record usage per request, not cumulatively across requests.`,
        { issues: [{ path: "usage", message: `token totals must stay <= ${MAX_TOKENS}` }] },
      );
    }
    for (let target: ExecContext | null = this.#base ?? this; target !== null;) {
      const u = (target.#usage ??= { p: 0, c: 0, t: 0, cost: 0 });
      u.p += p;
      u.c += c;
      u.t += t;
      u.cost += cost;
      const up: ExecContext | null = target.#parent;
      target = up === null ? null : (up.#base ?? up);
    }
  }

  /**
   * Names of the agents on the path from the root to this context, innermost first. Used to
   * refuse delegation cycles.
   */
  agentPath(): string[] {
    const path: string[] = [];
    const visit = (name: string | null): void => {
      if (name !== null && path[path.length - 1] !== name) path.push(name);
    };
    visit(this.agentName);
    for (let c = this.#parent; c !== null; c = c.#parent) visit(c.agentName);
    return path;
  }

  /** The durable run this request executes in, or null. */
  get run(): RunContext | null {
    return this.local(kRunContext) ?? null;
  }
}
