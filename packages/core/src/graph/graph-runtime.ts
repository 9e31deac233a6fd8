import { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError, parseOrThrow } from "../errors.js";
import { requireObjectOptions } from "../internal/object-options.js";
import { safeListener } from "../internal/report.js";
import { RunStatus, type RunRecord } from "../runs/types.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import {
  admitExecution,
  admitFromEvent,
  admitSlot,
  type AdmissionScope,
  type TriggerOptions,
} from "./admission.js";
import type { EntryPoint, EntryPointInfo } from "./entry-points.js";
import { EventBus, type EventHandler, type SubscribeOptions } from "./event-bus.js";
import { replayEvents, type EventType, type GraphEvent } from "./events.js";
import type { ExecutionResult } from "./execution-result.js";
import { GraphExecutor } from "./executor.js";
import {
  GraphRuntimeOptionsSchema,
  type GraphRuntimeOptions,
  type ParsedGraphRuntimeOptions,
} from "./runtime-options.js";
import { Triggers } from "./triggers.js";
import { checkAnswer } from "./answers.js";
import { buildStreams, entryPointInfos, streamCounters, type Stream } from "./entry-streams.js";
import { ExecutionWatcher } from "./execution-watcher.js";
import { graphHandler, handlerRuntime } from "./graph-handler.js";
import { SessionSigner } from "./session-signer.js";
import { checkStartState } from "./session-start.js";
import { SharedState } from "./shared-state.js";
import type { Graph } from "./types.js";

export type { TriggerOptions };

/**
 * The graph-level runtime (the seed's `AgentRuntime`; named `GraphRuntime` here because Nerva's
 * `AgentRuntime` executes handlers): entry points, one execution stream (queue + runner) per
 * entry point, the typed event bus, shared state and sessionState resumes. Every execution is a
 * durable run.
 *
 * @example
 * const runtime = createGraphRuntime({ graph, runtime: agents, queue });
 * await runtime.start();
 * const result = await runtime.triggerAndWait("default", { orderId: "42" }, ctx);
 * await runtime.stop();
 */
export class GraphRuntime {
  readonly graph: Graph;
  readonly #o: ParsedGraphRuntimeOptions;
  readonly #executor: GraphExecutor;
  readonly #handlers: InProcessRuntime;
  readonly #streams = new Map<string, Stream>();
  readonly #bus: EventBus;
  readonly #shared: SharedState;
  readonly #watcher: ExecutionWatcher;
  readonly #triggers: Triggers;
  readonly #nodeIds: ReadonlySet<string>;
  readonly #sessions: SessionSigner;
  readonly #admission: AdmissionScope;
  #running = false;
  #published = 0;
  /** The `onError` option, safe to call from timers and event callbacks. */
  readonly #report: (err: unknown) => void;

  constructor(options: GraphRuntimeOptions) {
    const o = parseOrThrow(
      GraphRuntimeOptionsSchema,
      options,
      ErrorCode.INVALID_OPTIONS,
      "options",
      "Pass { graph: defineGraph(...), runtime: AgentRuntime, queue: RunQueue, entryPoints?, tools?, memory?, policy?, concurrency?, leaseSeconds?, heartbeatSeconds?, runner? or traceSink? }.",
    );
    this.#o = o;
    this.#report = safeListener(o.onError, "the GraphRuntime's onError");
    this.graph = o.graph;
    this.#nodeIds = new Set(o.graph.nodeIds);
    this.#executor = new GraphExecutor(o.graph, {
      runtime: o.runtime,
      tools: o.tools ?? null,
      memory: o.memory ?? null,
      policy: o.policy ?? null,
    });
    this.#bus = new EventBus({ bufferSize: o.eventBufferSize, onError: (e) => this.#error(e) });
    this.#shared = new SharedState(o.sharedState);
    this.#sessions = new SessionSigner(o.queue, o.sessionKey);
    this.#handlers = handlerRuntime(
      o,
      graphHandler(
        this.#executor,
        () => this.#shared.forExecution(),
        (ctx) => this.#onStart(ctx),
      ),
    );
    this.#watcher = new ExecutionWatcher(
      o.queue,
      this.#nodeIds,
      () => this.#bus.size > 0 || this.#triggers.listens,
      (g) => {
        this.#published += 1;
        this.#bus.publish(g);
        this.#triggers.onEvent(g);
      },
      (e) => this.#error(e),
    );
    for (const stream of buildStreams(o, this.#handlers, (e) => this.#error(e))) {
      this.#streams.set(stream.ep.id, stream);
    }
    this.#triggers = new Triggers(
      this,
      [...this.#streams.values()].map((s) => s.ep),
      (e) => this.#error(e),
    );
    this.#admission = {
      graph: this.graph,
      executor: this.#executor,
      queue: o.queue,
      streams: this.#streams,
      watcher: this.#watcher,
      sessionKey: () => this.#sessions.key(),
    };
  }

  /** Whether `start()` ran and `stop()` did not. */
  get isRunning(): boolean {
    return this.#running;
  }

  /** The shared state of this runtime (`isolated`: the initial values). */
  get sharedState(): SharedState {
    return this.#shared;
  }

  /** Starts the entry points' runners, timers and event triggers. */
  async start(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    for (const s of this.#streams.values()) await s.runner?.start();
    this.#triggers.start();
  }

  /**
   * Stops triggers and runners: running executions get `graceSeconds` to finish, then go back to
   * their queue (another process, or the next start, resumes them). The store stays open.
   */
  async stop(options: { graceSeconds?: number } = {}): Promise<void> {
    requireObjectOptions(options, ErrorCode.INVALID_INPUT, "Pass { graceSeconds?: number }.");
    if (!this.#running) return;
    this.#running = false;
    this.#triggers.stop();
    await Promise.all([...this.#streams.values()].map((s) => s.runner?.stop(options)));
    this.#watcher.stop();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
    await this.#handlers.close();
  }

  /**
   * Starts an execution of entry point `entryPointId` with `input` as its start state (or, with
   * `sessionState`, resumes a paused one: `input` is merged into its state, and answers the
   * paused input node when it holds that node's key). Returns the execution id at once.
   * RATE_LIMITED when the entry point's backlog is full.
   */
  async trigger(
    entryPointId: string,
    input: Record<string, unknown> = {},
    ctx: ExecContext = ExecContext.create(),
    options: TriggerOptions = {},
  ): Promise<string> {
    requireObjectOptions(
      options,
      ErrorCode.INVALID_INPUT,
      "Pass { sessionState?, idempotencyKey?, timeoutSeconds? }.",
    );
    return (await admitExecution(this.#admission, entryPointId, input, ctx, options, [])).id;
  }

  /** `trigger`, then waits until the execution pauses or ends, and returns its result. */
  async triggerAndWait(
    entryPointId: string,
    input: Record<string, unknown> = {},
    ctx: ExecContext = ExecContext.create(),
    options: TriggerOptions = {},
  ): Promise<ExecutionResult> {
    const id = await this.trigger(entryPointId, input, ctx, options);
    return this.wait(
      id,
      options.timeoutSeconds === undefined ? {} : { timeoutSeconds: options.timeoutSeconds },
    );
  }

  /**
   * Triggers the webhook entry point whose path is `path` with `body` (the parsed JSON object;
   * `null`/`undefined`: an empty state) as start state. INVALID_INPUT for anything else (a raw
   * `Buffer`, a `Map`…), whose data would be lost.
   */
  async handleWebhook(
    path: string,
    body: unknown,
    ctx: ExecContext,
    options: TriggerOptions = {},
  ): Promise<string> {
    const stream = [...this.#streams.values()].find(
      (s) => s.ep.trigger.type === "webhook" && s.ep.trigger.path === path,
    );
    if (stream === undefined) {
      throw new NervaError(ErrorCode.NOT_FOUND, `No webhook entry point has path "${path}".`);
    }
    if (body !== undefined && body !== null) checkStartState(body, "body");
    return this.trigger(stream.ep.id, (body ?? {}) as Record<string, unknown>, ctx, options);
  }

  /** Waits until execution `id` pauses or ends (TIMEOUT after `timeoutSeconds`) and returns it. */
  async wait(
    id: string,
    options: { timeoutSeconds?: number; signal?: AbortSignal } = {},
  ): Promise<ExecutionResult> {
    const run = await this.#o.queue.wait(id, {
      ...options,
      until: [
        RunStatus.PAUSED,
        RunStatus.SUCCEEDED,
        RunStatus.FAILED,
        RunStatus.CANCELLED,
        RunStatus.TIMED_OUT,
      ],
    });
    return this.#sessions.result(run);
  }

  /** The execution `id` as it is now (`null` for an unknown id). */
  async getExecution(id: string): Promise<ExecutionResult | null> {
    const run = await this.#o.queue.get(id);
    return run === null || run.handlers[0] !== this.graph.name ? null : this.#sessions.result(run);
  }

  /** Cancels execution `id`: a running node's `ctx.signal` aborts; it ends `cancelled`. */
  async cancel(id: string, options: { reason?: string } = {}): Promise<ExecutionResult> {
    await this.#known(id);
    return this.#sessions.result(await this.#o.queue.cancel(id, options));
  }

  /**
   * Answers the node execution `executionId` is paused at. INVALID_STATE when it is not paused
   * at `nodeId`; INVALID_INPUT when `content` does not fit the node's schema.
   */
  async injectInput(
    executionId: string,
    nodeId: string,
    content: unknown,
  ): Promise<ExecutionResult> {
    const run = await this.#known(executionId);
    const value = checkAnswer(this.graph, run, nodeId, content);
    const resumed = await this.#o.queue.resume(executionId, value ?? null, {
      key: run.pause?.key as string,
    });
    // Its events from the run.resumed this resume wrote (the record's last event) on.
    this.#watcher.watch(resumed, resumed.lastSeq - 1);
    return this.#sessions.result(resumed);
  }

  /**
   * Subscribes `handler` to typed events (all types with `null`) of the executions this process
   * triggers or runs, optionally of one entry point or execution. Returns the subscription id.
   * A slow handler never blocks executions: past `bufferSize` events are dropped for it and the
   * next delivery says how many (`info.missed`).
   */
  subscribe(
    types: readonly EventType[] | null,
    handler: EventHandler,
    options: SubscribeOptions = {},
  ): string {
    const id = this.#bus.subscribe(types, handler, options);
    this.#watcher.wake();
    return id;
  }

  unsubscribe(id: string): boolean {
    return this.#bus.unsubscribe(id);
  }

  /**
   * The typed events of execution `id` from the durable log: those after `afterSeq`, then live
   * ones until it ends (or `signal` aborts). What an SSE route serves (Last-Event-ID = seq).
   */
  events(
    id: string,
    options: { afterSeq?: number; types?: readonly EventType[]; signal?: AbortSignal } = {},
  ): AsyncGenerator<GraphEvent, void, undefined> {
    // An async generator queues return() behind a pending next(): the reader's return() (a
    // client that left an SSE stream) aborts the wait first, so the tail ends now.
    const stop = new AbortController();
    const tail = this.#events(id, options, stop.signal);
    const wrapped: AsyncGenerator<GraphEvent, void, undefined> = {
      next: () => tail.next(),
      return: (value?: void | PromiseLike<void>) => {
        stop.abort();
        return tail.return(value as void);
      },
      throw: (err: unknown) => {
        stop.abort();
        return tail.throw(err);
      },
      [Symbol.asyncIterator]: () => wrapped,
    };
    return wrapped;
  }

  async *#events(
    id: string,
    options: { afterSeq?: number; types?: readonly EventType[]; signal?: AbortSignal },
    stopped: AbortSignal,
  ): AsyncGenerator<GraphEvent, void, undefined> {
    requireObjectOptions(
      options,
      ErrorCode.INVALID_INPUT,
      "Pass { afterSeq?, types?: EventType[], signal? }.",
    );
    if (options.types !== undefined && !Array.isArray(options.types)) {
      throw new NervaError(
        ErrorCode.INVALID_INPUT,
        "Invalid options.types: must be a list of EventType values (omit it for all).",
        { issues: [{ path: "options.types", message: "must be an array" }] },
      );
    }
    const signal =
      options.signal === undefined ? stopped : AbortSignal.any([options.signal, stopped]);
    const run = await this.#known(id);
    yield* replayEvents(this.#o.queue, run, this.#nodeIds, { ...options, signal });
  }

  getEntryPoints(): EntryPointInfo[] {
    return entryPointInfos(this.#streams.values(), this.graph);
  }

  /** Counters of this process: per entry point, subscribers, events. */
  getStats(): {
    running: boolean;
    entryPoints: Record<string, { triggered: number; rateLimited: number; active: number }>;
    watched: number;
    subscribers: number;
    eventsPublished: number;
  } {
    return {
      running: this.#running,
      entryPoints: streamCounters(this.#streams.values()),
      watched: this.#watcher.size,
      subscribers: this.#bus.size,
      eventsPublished: this.#published,
    };
  }

  /** How many events subscription `id` has lost to its full buffer (`null`: no such id). */
  missedEvents(id: string): number | null {
    return this.#bus.stats(id)?.missedTotal ?? null;
  }

  /** Execution `id` of this graph; NOT_FOUND otherwise. */
  async #known(id: string): Promise<RunRecord> {
    const run = await this.#o.queue.get(id);
    if (run === null || run.handlers[0] !== this.graph.name) {
      throw new NervaError(
        ErrorCode.NOT_FOUND,
        `No execution ${JSON.stringify(id)} of graph "${this.graph.name}".`,
      );
    }
    return run;
  }

  /** Entry points that led to execution `id` (for the event loop guard). */
  chainOf(id: string): readonly string[] {
    return this.#watcher.chainOf(id);
  }

  /** Used by event triggers: admits an execution caused by `event`. */
  triggerFromEvent(
    ep: EntryPoint,
    event: GraphEvent,
    input: Record<string, unknown>,
  ): Promise<RunRecord> {
    return admitFromEvent(this.#admission, ep, event, input, this.chainOf(event.executionId));
  }

  /** Used by timers: admits the execution of one schedule slot. */
  triggerSlot(ep: EntryPoint, slot: number, input: Record<string, unknown>): Promise<RunRecord> {
    return admitSlot(this.#admission, ep, slot, input);
  }

  /** An execution starts in this process: follow it on the bus when anybody listens. */
  async #onStart(ctx: ExecContext): Promise<void> {
    const run = ctx.run;
    if (run === null || this.#watcher.has(run.runId) || this.#bus.size === 0) return;
    const record = await this.#o.queue.get(run.runId);
    // From the run.started of this claim (its last event) on: what came before ran elsewhere, or
    // was already delivered here before the execution paused.
    if (record !== null) this.#watcher.watch(record, Math.max(0, record.lastSeq - 1));
  }

  #error(err: unknown): void {
    this.#report(err);
  }
}

/**
 * Creates the {@link GraphRuntime} of a graph.
 *
 * @example
 * const runtime = createGraphRuntime({
 *   graph, runtime: agents, queue,
 *   entryPoints: [{ id: "default", trigger: { type: "manual" } }, { id: "nightly", entryNode: "lookup", trigger: { type: "timer", cron: "0 3 * * *" } }],
 * });
 */
export function createGraphRuntime(options: GraphRuntimeOptions): GraphRuntime {
  return new GraphRuntime(options);
}
