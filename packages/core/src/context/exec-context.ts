// One idea, one class: the context every call receives. Its lifecycle (deadline, cancellation
// tree, signal), options, wire form, usage totals and events live in their own files beside it;
// what stays here is the class users program against, most of it TSDoc for its public members.
import { ErrorCode, NervaError } from "../errors.js";
import type { Permissions } from "../types/permissions.js";
import type { Scope } from "../types/status.js";
import type { ExecContextWire } from "../types/context-wire.js";
import type { Attributes } from "../types/trace.js";
import type { TokenUsage, TokenUsageDelta } from "../types/usage.js";
import type { ContextEvent } from "./events.js";
import { formatTraceparent, newRequestId, parseTraceparent } from "./ids.js";
import { ContextLifecycle } from "./lifecycle.js";
import { ContextKey, type LocalSlots } from "./local.js";
import {
  checkSeconds,
  parseCreateOptions,
  permissionsOf,
  type ChildOptions,
  type ExecContextOptions,
  type ForkOptions,
  type FromWireOptions,
  type StartSpanOptions,
  type StreamSink,
  type ToWireOptions,
} from "./options.js";
import { guardSink, type TraceSink } from "./trace-sink.js";
import { kRunContext, type RunContext } from "./run-slot.js";
import { Span, nowMs, spanParentId, type MeasuredSpanInit, type SpanParent } from "./span.js";
import {
  addUsage,
  checkUsageFits,
  parseUsageDelta,
  usageSnapshot,
  type UsageTotals,
} from "./usage.js";
import { contextToWire, parseContextWire, Identity } from "./wire.js";

// The types of this class's API live next to the code that gives them meaning; they are
// re-exported here so that `exec-context.js` stays the one import for users of the class.
export { eventToWire, type ContextEvent } from "./events.js";
export type {
  ChildOptions,
  ExecContextOptions,
  ForkOptions,
  FromWireOptions,
  StartSpanOptions,
  StreamSink,
  ToWireOptions,
} from "./options.js";

const NO_METADATA: Readonly<Record<string, string>> = Object.freeze({});

/** Spans and events of one context tree, shared by a root context and all its descendants. */
interface Recorder {
  readonly spans: Span[];
  readonly events: ContextEvent[];
}

/**
 * How many spans, and how many events, one context tree keeps in `spans` and `events`: the first
 * ones. Past it they still go to the trace sink, so a context kept for a long time (a worker's
 * own, used for every call) holds a bounded amount of memory instead of one span per call.
 */
const MAX_RECORDED_PER_TREE = 10_000;

/**
 * The one object that flows through every Nerva call: identity, permissions, memory scope, spans,
 * events, token usage, deadline and cancellation, and an optional stream sink.
 *
 * Contexts form a tree. `child(name)` starts a sub-request (delegation): same trace, identity,
 * permissions, scope and stream; new request id; depth + 1; a deadline never later than the
 * parent's. Cancelling a parent cancels its children; cancelling a child leaves the parent alone.
 *
 * The deadline, cancellation and disposal come from {@link ContextLifecycle} (`lifecycle.ts`);
 * options and their validation from `options.ts`. Nothing is left behind: the AbortSignal and
 * the deadline timer are created only when needed and released when the context ends.
 *
 * @example
 * const ctx = ExecContext.create({ userId: "u1", sessionId: "s1", timeoutSeconds: 30 });
 * await runtime.invoke("my_agent", { message: "hello" }, ctx);
 * console.log(formatSpanTree(ctx.spans));
 * ctx.dispose();
 */
export class ExecContext extends ContextLifecycle {
  readonly requestId: string;
  readonly stream: StreamSink | null;
  /** 0 for a root context, parent's depth + 1 for a child. */
  readonly depth: number;
  /** The agent this context runs for (`null` at the root). */
  readonly agentName: string | null;
  /** Epoch milliseconds. */
  readonly createdAt: number;

  /** Trace, identity, permissions and scope: one object shared by the whole tree, never changed. */
  readonly #id: Identity;
  /** Set on a fork: the context whose request (token usage) the fork belongs to. */
  readonly #base: ExecContext | null;
  /** Parent of new spans started on this context. */
  readonly #span: SpanParent;
  #recorder: Recorder | null = null;
  /** Request-local slots; only the root of a tree holds them (see local()). */
  #locals: LocalSlots | null = null;
  #usage: UsageTotals | null = null;

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
    super(parent, timeoutAt, onEnd);
    this.#id = id;
    this.requestId = requestId;
    this.stream = stream;
    this.depth = depth;
    this.agentName = agentName;
    this.createdAt = createdAt;
    this.#base = base;
    this.#span = span;
    this.startLifecycle();
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
    const o = parseCreateOptions(options);
    const permissions = permissionsOf(o.permissions);
    const remote = o.traceId === undefined ? parseTraceparent(o.traceparent) : null;
    const createdAt = Date.now();
    const id = new Identity(
      o.traceId ?? remote?.traceId ?? null,
      o.userId ?? null,
      o.sessionId ?? null,
      permissions,
      o.memoryScope ?? "session",
      o.metadata === undefined ? NO_METADATA : Object.freeze({ ...o.metadata }),
      o.traceSink == null ? null : guardSink(o.traceSink),
      remote?.sampled ?? true,
    );
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
  static fromWire(wire: unknown, options: FromWireOptions = {}): ExecContext {
    const sink =
      options.traceSink == null ? null : guardSink(options.traceSink, "options.traceSink");
    const w = parseContextWire(wire, sink);
    const ctx = new ExecContext(
      w.id,
      w.requestId,
      options.stream ?? null,
      w.depth,
      w.agentName,
      w.createdAt,
      w.timeoutAt,
      null,
      null,
      w.spanId,
      null,
    );
    ctx.#usage = w.usage;
    if (w.cancelled) ctx.cancel("cancelled before it crossed the wire");
    return ctx;
  }

  /**
   * The serialisable part of this context in the wire format of Nerva's published spec
   * (snake_case, Unix-seconds timestamps), plus `agent_name`, `depth` and `span_id`.
   * Spans and events are included only with `{ includeTrace: true }`.
   */
  toWire(options: ToWireOptions = {}): ExecContextWire {
    return contextToWire(this, spanParentId(this.#span), options.includeTrace === true);
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
        ErrorCode.INVALID_OPTIONS,
        "Invalid name: child(name) needs the non-empty name of the agent it runs for.",
        { issues: [{ path: "name", message: "must be a non-empty string" }] },
      );
    }
    const now = Date.now();
    return new ExecContext(
      this.#id,
      newRequestId(),
      this.stream,
      this.depth + 1,
      name,
      now,
      this.#deadline(options.timeoutSeconds, "options.timeoutSeconds", now),
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

  // The clock is read only for a new timeout: a fork without one (every handle(), every span())
  // inherits the deadline, and a clock reading costs ~50 ns on the VMs this is measured on.
  #deadline(timeoutSeconds: number | undefined, label: string, now?: number): number | null {
    if (timeoutSeconds === undefined) return this.timeoutAt;
    const own = (now ?? Date.now()) + checkSeconds(timeoutSeconds, label) * 1000;
    return this.timeoutAt === null ? own : Math.min(own, this.timeoutAt);
  }

  // ---- observability ---------------------------------------------------------------------

  static #parentOf(ctx: ExecContext): ExecContext | null {
    return ctx.parentNode as ExecContext | null;
  }

  static #rootOf(ctx: ExecContext): ExecContext {
    for (let up = ExecContext.#parentOf(ctx); up !== null; up = ExecContext.#parentOf(up)) ctx = up;
    return ctx;
  }

  #rec(): Recorder {
    return (ExecContext.#rootOf(this).#recorder ??= { spans: [], events: [] });
  }

  /**
   * The spans of this context's tree (root, children and forks), in start order: the first
   * 10,000; a trace sink gets every one.
   */
  get spans(): readonly Span[] {
    return this.#rec().spans;
  }

  /** The events of this context's tree, in order: the first 10,000, as {@link spans}. */
  get events(): readonly ContextEvent[] {
    return this.#rec().events;
  }

  /** The span new spans of this context nest under (`null` at the top of a trace). */
  get currentSpanId(): string | null {
    return spanParentId(this.#span);
  }

  /**
   * The span new spans of this context nest under, when it is a span of this process; `null` at
   * the top of a trace or under a remote parent (a `traceparent`, a context from the wire).
   *
   * @example
   * ctx.currentSpan?.setAttribute("cache", "hit");
   */
  get currentSpan(): Span | null {
    return this.#span instanceof Span ? this.#span : null;
  }

  /** The trace sink of this context's tree (`traceSink` option), or null. */
  get traceSink(): TraceSink | null {
    const sink = this.#id.sink;
    return sink === null ? null : sink.inner;
  }

  /** The trace's sampled flag, kept from the caller's `traceparent` (true when there was none). */
  get sampled(): boolean {
    return this.#id.sampled;
  }

  /**
   * A W3C `traceparent` for an outgoing call made from this context, so that the callee's spans
   * join this trace under the current span. `null` when there is no current span to point at
   * (start one first, e.g. with `ctx.span("http.call", ...)`).
   *
   * @example
   * const tp = ctx.traceparent();
   * await fetch(url, { headers: tp === null ? {} : { traceparent: tp } });
   */
  traceparent(): string | null {
    const spanId = spanParentId(this.#span);
    return spanId === null ? null : formatTraceparent(this.traceId, spanId, this.#id.sampled);
  }

  /**
   * Starts a span nested under this context's current span. End it with `span.end()`.
   *
   * @example
   * const span = ctx.startSpan("tools.call", { tool: "search" });
   */
  startSpan(name: string, attributes?: Attributes, options?: StartSpanOptions): Span {
    const span = new Span(this.#span, this.#id, this.requestId, name, attributes, options?.kind);
    const spans = this.#rec().spans;
    if (spans.length < MAX_RECORDED_PER_TREE) spans.push(span);
    const sink = this.#id.sink;
    if (sink !== null) sink.spanStart(span);
    return span;
  }

  /**
   * Records a span measured in another process (reported by a worker) under `parent`, a span of
   * this context's tree: it joins `spans` and the trace sink is told it started. End it with
   * `span.endAt(...)`. `init` must already be bounded (see protocol/worker-spans.ts).
   * @internal
   */
  adoptSpan(parent: Span, init: MeasuredSpanInit): Span {
    const span = Span.measured(parent, this.requestId, init);
    const spans = this.#rec().spans;
    if (spans.length < MAX_RECORDED_PER_TREE) spans.push(span);
    const sink = this.#id.sink;
    if (sink !== null) sink.spanStart(span);
    return span;
  }

  /**
   * Runs `fn` with `span` as the current span of the trace sink's host tracer (the sink's
   * `runInSpan`, e.g. OpenTelemetry's active context), so that spans an instrumented library
   * creates inside `fn` (an HTTP client, a database driver) nest under it. Without such a sink it
   * just calls `fn`. Runtimes do this around handlers, tool managers around a tool's `run`.
   *
   * @example
   * const rows = ctx.runInSpan(span, () => db.query(sql));
   */
  runInSpan<T>(span: Span, fn: () => T): T {
    const sink = this.#id.sink;
    return sink === null ? fn() : sink.run(span, fn);
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

  /** Records a structured event under the current span. */
  event(name: string, attributes: Attributes = {}): ContextEvent {
    return this.#recordEvent(name, nowMs(), spanParentId(this.#span), attributes);
  }

  /**
   * Records an event measured elsewhere, with its own time and span: what a runtime does with a
   * worker's `event` frames (handlers call {@link event}). The caller bounds its content.
   *
   * @example
   * ctx.adoptEvent({ name: "cache.miss", timestampMs: Date.now(), spanId: span.id, attributes: {} });
   */
  adoptEvent(init: {
    readonly name: string;
    readonly timestampMs: number;
    readonly spanId: string | null;
    readonly attributes: Readonly<Attributes>;
  }): ContextEvent {
    return this.#recordEvent(init.name, init.timestampMs, init.spanId, init.attributes);
  }

  #recordEvent(
    name: string,
    timestampMs: number,
    spanId: string | null,
    attributes: Readonly<Attributes>,
  ): ContextEvent {
    const event: ContextEvent = Object.freeze({
      name,
      timestampMs,
      traceId: this.traceId,
      requestId: this.requestId,
      spanId,
      attributes: Object.freeze({ ...attributes }),
    });
    const events = this.#rec().events;
    if (events.length < MAX_RECORDED_PER_TREE) events.push(event);
    const sink = this.#id.sink;
    if (sink !== null) sink.event(event);
    return event;
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
        ErrorCode.INVALID_OPTIONS,
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

  /** Usage of this request and of every child request below it. */
  get tokenUsage(): TokenUsage {
    return usageSnapshot((this.#base ?? this).#usage);
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
   * Adds one LLM call's usage to this context and every ancestor request, and to the current
   * span's own `usage` (and the `totalUsage` of it and its ancestor spans). Throws INVALID_INPUT
   * on negative or non-integer token counts.
   *
   * @example
   * ctx.recordTokens({ promptTokens: 120, completionTokens: 30, costUsd: 0.0004 });
   */
  recordTokens(delta: TokenUsageDelta): void {
    const d = parseUsageDelta(delta);
    // A fork's usage belongs to its base; a request's usage also counts for every ancestor
    // request. The outermost request holds the largest totals: it alone needs the range check.
    let top: ExecContext = this.#base ?? this;
    for (let up = ExecContext.#parentOf(top); up !== null; up = ExecContext.#parentOf(top)) {
      top = up.#base ?? up;
    }
    checkUsageFits(top.#usage, d, top.requestId);
    for (let target: ExecContext | null = this.#base ?? this; target !== null;) {
      addUsage((target.#usage ??= { p: 0, c: 0, t: 0, cost: 0 }), d);
      const up = ExecContext.#parentOf(target);
      target = up === null ? null : (up.#base ?? up);
    }
    if (this.#span instanceof Span) this.#span.addUsage(d);
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
    for (let c = ExecContext.#parentOf(this); c !== null; c = ExecContext.#parentOf(c)) {
      visit(c.agentName);
    }
    return path;
  }

  /** The durable run this request executes in, or null. */
  get run(): RunContext | null {
    return this.local(kRunContext) ?? null;
  }
}
