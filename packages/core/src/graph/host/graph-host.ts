import { stoppable } from "../../internal/stoppable.js";
import { ExecContext } from "../../context/exec-context.js";
import { ErrorCode, NervaError, parseOrThrow } from "../../errors.js";
import { requireObjectOptions } from "../../internal/object-options.js";
import { safeListener } from "../../internal/report.js";
import { InMemoryRunStore } from "../../runs/memory/in-memory-store.js";
import { RunQueue } from "../../runs/run-queue.js";
import { Runner } from "../../runs/runner.js";
import { RunStatus, type RunEvent, type RunRecord } from "../../runs/types.js";
import { InProcessRuntime } from "../../runtime/in-process-runtime.js";
import {
  admitExecution,
  admitFromEvent,
  admitSlot,
  type AdmissionScope,
  type TriggerOptions,
} from "./admission.js";
import type { EntryPoint, EntryPointInfo } from "./entry-points.js";
import { EventBus, type EventHandler, type SubscribeOptions } from "./event-bus.js";
import { replayEvents } from "../execute/events.js";
import type { GraphRun } from "./graph-run.js";
import type { SessionState } from "./session-state.js";
import { GraphExecutor } from "../execute/executor.js";
import {
  GraphHostOptionsSchema,
  type GraphHostOptions,
  type ParsedGraphHostOptions,
} from "./host-options.js";
import { Triggers } from "./triggers.js";
import { checkAnswer } from "../execute/answers.js";
import { buildStreams, entryPointInfos, streamCounters, type Stream } from "./entry-streams.js";
import { RunWatcher } from "./run-watcher.js";
import { graphHandler } from "../execute/graph-handler.js";
import { handlerRuntime } from "./handler-runtime.js";
import { SessionSigner } from "./session-signer.js";
import { checkStartState } from "./session-start.js";
import { SharedState } from "../execute/shared-state.js";
import type { Graph } from "../define/types.js";
import { isDefinedGraph } from "../define/define-graph.js";

export type { TriggerOptions };

/** Options of {@link GraphHost.resume}. */
export interface ResumeOptions {
  /** Who answers (a resume from a sessionState starts a new run with this context). */
  readonly ctx?: ExecContext;
  /** With a sessionState: values merged into the state the run continues with. */
  readonly state?: Record<string, unknown>;
}

/**
 * Hosts a graph: its entry points (manual, webhook, timer, event), a runner per entry point,
 * the event bus, shared state, and resumes. Every run of the graph is a durable run of the
 * queue's store, with the same statuses, events and resume as any other run.
 *
 * @example
 * const host = new GraphHost({ graph, queue });
 * await host.start();
 * const run = await host.triggerAndWait("default", { orderId: "42" }, ctx);
 * if (run.status === "paused") await host.resume(run.runId, "approved");
 * await host.stop();
 */
export class GraphHost {
  readonly graph: Graph;
  readonly #o: ParsedGraphHostOptions;
  readonly #executor: GraphExecutor;
  readonly #handlers: InProcessRuntime;
  readonly #streams = new Map<string, Stream>();
  readonly #bus: EventBus;
  readonly #shared: SharedState;
  readonly #watcher: RunWatcher;
  readonly #triggers: Triggers;
  readonly #nodeIds: ReadonlySet<string>;
  readonly #sessions: SessionSigner;
  readonly #admission: AdmissionScope;
  #running = false;
  #published = 0;
  /** The `onError` option, safe to call from timers and event callbacks. */
  readonly #report: (err: unknown) => void;

  constructor(options: GraphHostOptions) {
    const o = parseOrThrow(
      GraphHostOptionsSchema,
      withDefaults(options),
      ErrorCode.INVALID_OPTIONS,
      "options",
      "Pass { graph: defineGraph(...), runtime?: AgentRuntime, queue?: RunQueue, entryPoints?, tools?, memory?, policy?, runner?: a Runner or { concurrency?, leaseSeconds?, heartbeatSeconds?, workerId?, traceSink? } }.",
    );
    this.#o = o;
    this.#report = safeListener(o.onError, "the GraphHost's onError");
    this.graph = o.graph;
    this.#nodeIds = new Set(o.graph.nodeIds);
    this.#executor = new GraphExecutor(o.graph, {
      runtime: o.runtime,
      tools: o.tools ?? null,
      memory: o.memory ?? null,
      policy: o.policy ?? null,
    });
    this.#bus = new EventBus({ bufferSize: o.eventBufferSize, onError: (e) => this.#error(e) });
    this.#shared = new SharedState(o.sharedState, o.graph.name);
    this.#sessions = new SessionSigner(o.queue, o.sessionKey);
    this.#handlers = handlerRuntime(
      o,
      graphHandler(
        this.#executor,
        () => this.#shared.forExecution(),
        (ctx) => this.#onStart(ctx),
      ),
    );
    this.#watcher = new RunWatcher(
      o.queue,
      this.#nodeIds,
      () => this.#bus.size > 0 || this.#triggers.listens,
      (e, entryPoint) => {
        this.#published += 1;
        this.#bus.publish(e, entryPoint);
        this.#triggers.onEvent(e, entryPoint);
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

  /** The shared state of this host: its isolation, its store, `snapshot()` of its values. */
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
   * Stops triggers and runners: running runs get `graceSeconds` to finish, then go back to
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
   * Starts a run of entry point `entryPointId` with `input` as its start state. Returns the run
   * id at once. RATE_LIMITED when the entry point's backlog is full.
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
      "Pass { idempotencyKey?, timeoutSeconds? }.",
    );
    if ("sessionState" in options) {
      throw new NervaError(
        ErrorCode.INVALID_INPUT,
        "Invalid options.sessionState: trigger starts a new run. Resume a paused one with host.resume(sessionState, answer).",
        { issues: [{ path: "options.sessionState", message: "use resume(sessionState, answer)" }] },
      );
    }
    return (await admitExecution(this.#admission, entryPointId, input, ctx, options, [])).id;
  }

  /** `trigger`, then waits until the run pauses or ends, and returns its result. */
  async triggerAndWait(
    entryPointId: string,
    input: Record<string, unknown> = {},
    ctx: ExecContext = ExecContext.create(),
    options: TriggerOptions = {},
  ): Promise<GraphRun> {
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

  /** Waits until run `id` pauses or ends (TIMEOUT after `timeoutSeconds`) and returns it. */
  async wait(
    id: string,
    options: { timeoutSeconds?: number; signal?: AbortSignal } = {},
  ): Promise<GraphRun> {
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

  /** The queue this host's runs go through (`options.queue`). */
  get queue(): RunQueue {
    return this.#o.queue;
  }

  /** The run `id` as it is now (`null` for an unknown id). */
  async get(id: string): Promise<GraphRun | null> {
    const run = await this.#o.queue.get(id);
    return run === null || run.handlers[0] !== this.graph.name ? null : this.#sessions.result(run);
  }

  /** Cancels run `id`: a running node's `ctx.signal` aborts; it ends `cancelled`. */
  async cancel(id: string, options: { reason?: string } = {}): Promise<GraphRun> {
    await this.#known(id);
    return this.#sessions.result(await this.#o.queue.cancel(id, options));
  }

  /**
   * Answers the pause of run `runId` (an input node, an agent node waiting for data), like
   * `queue.resume`: the run continues on any worker of the store. INVALID_STATE when it is not
   * paused; INVALID_INPUT when `answer` does not fit what the pause asks.
   */
  async resume(
    target: string | SessionState,
    answer: unknown,
    options: ResumeOptions = {},
  ): Promise<GraphRun> {
    requireObjectOptions(options, ErrorCode.INVALID_INPUT, "Pass { ctx?, state? }.");
    if (typeof target === "object" && target !== null) {
      return this.#resumeSession(target, answer, options);
    }
    const runId = target;
    const run = await this.#known(runId);
    const value = checkAnswer(this.graph, run, answer);
    const resumed = await this.#o.queue.resume(runId, value ?? null, {
      key: run.pause?.key as string,
      ...(options.ctx === undefined ? {} : { ctx: options.ctx }),
    });
    // Its events from the run.resumed this resume wrote (the record's last event) on.
    this.#watcher.watch(resumed, resumed.lastSeq - 1);
    return this.#sessions.result(resumed);
  }

  /**
   * A resume from a signed sessionState: a new run continues where the paused one stood (which
   * ends, when this store has it), with `answer` for the paused input node and `state` merged.
   */
  async #resumeSession(
    session: SessionState,
    answer: unknown,
    options: ResumeOptions,
  ): Promise<GraphRun> {
    const s = session as Partial<SessionState>;
    const node = typeof s.node === "string" ? this.graph.nodes.get(s.node) : undefined;
    const writes = node?.kind === "input" ? node.writes?.[0] : undefined;
    const state = options.state ?? {};
    checkStartState(state, "options.state");
    const input =
      writes === undefined || answer === undefined ? state : { ...state, [writes]: answer };
    const run = await admitExecution(
      this.#admission,
      typeof s.entryPoint === "string" ? s.entryPoint : "default",
      input,
      options.ctx ?? ExecContext.create(),
      { sessionState: session },
      [],
    );
    return this.#sessions.result(run);
  }

  /**
   * Subscribes `handler` to typed events (all types with `null`) of the runs this process
   * triggers or runs, optionally of one entry point or run. Returns the subscription id.
   * A slow handler never blocks runs: past `bufferSize` events are dropped for it and the
   * next delivery says how many (`info.missed`).
   */
  subscribe(
    types: readonly string[] | null,
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
   * The typed events of run `id` from the durable log: those after `afterSeq`, then live
   * ones until it ends (or `signal` aborts). What an SSE route serves (Last-Event-ID = seq).
   */
  events(
    id: string,
    options: { afterSeq?: number; types?: readonly string[]; signal?: AbortSignal } = {},
  ): AsyncGenerator<RunEvent, void, undefined> {
    return stoppable((stopped) => this.#events(id, options, stopped));
  }

  async *#events(
    id: string,
    options: { afterSeq?: number; types?: readonly string[]; signal?: AbortSignal },
    stopped: AbortSignal,
  ): AsyncGenerator<RunEvent, void, undefined> {
    requireObjectOptions(
      options,
      ErrorCode.INVALID_INPUT,
      "Pass { afterSeq?, types?: string[] (run event types), signal? }.",
    );
    if (options.types !== undefined && !Array.isArray(options.types)) {
      throw new NervaError(
        ErrorCode.INVALID_INPUT,
        "Invalid options.types: must be a list of run event types (omit it for all).",
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
        `No run ${JSON.stringify(id)} of graph "${this.graph.name}".`,
      );
    }
    return run;
  }

  /** Entry points that led to run `id` (for the event loop guard). */
  chainOf(id: string): readonly string[] {
    return this.#watcher.chainOf(id);
  }

  /** Used by event triggers: admits a run caused by `event`. */
  triggerFromEvent(
    ep: EntryPoint,
    event: RunEvent,
    input: Record<string, unknown>,
  ): Promise<RunRecord> {
    return admitFromEvent(this.#admission, ep, event, input, this.chainOf(event.runId));
  }

  /** Used by timers: admits the run of one schedule slot. */
  triggerSlot(ep: EntryPoint, slot: number, input: Record<string, unknown>): Promise<RunRecord> {
    return admitSlot(this.#admission, ep, slot, input);
  }

  /** A run starts in this process: follow it on the bus when anybody listens. */
  async #onStart(ctx: ExecContext): Promise<void> {
    const run = ctx.run;
    if (run === null || this.#watcher.has(run.runId) || this.#bus.size === 0) return;
    const record = await this.#o.queue.get(run.runId);
    // From the run.started of this claim (its last event) on: what came before ran elsewhere, or
    // was already delivered here before the run paused.
    if (record !== null) this.#watcher.watch(record, Math.max(0, record.lastSeq - 1));
  }

  #error(err: unknown): void {
    this.#report(err);
  }
}

/**
 * The host's options with its defaults: a queue of its own on an in-memory store (named after
 * the graph), and, for a graph without agent nodes, an empty InProcessRuntime (the runner's own
 * when one is shared). A graph with agent nodes needs the runtime that has their handlers.
 */
function withDefaults(options: GraphHostOptions): unknown {
  if (typeof options !== "object" || options === null) return options;
  const o = options as Partial<ParsedGraphHostOptions>;
  const graph = isDefinedGraph(o.graph) ? o.graph : null;
  const shared = o.runner instanceof Runner ? o.runner : undefined;
  const queue =
    o.queue ??
    shared?.queue ??
    (graph === null
      ? undefined
      : new RunQueue({ store: new InMemoryRunStore(), name: graph.name.slice(0, 64) }));
  let runtime = o.runtime ?? shared?.runtime;
  if (runtime === undefined && graph !== null) {
    const agents = [...graph.nodes].filter(([, n]) => n.kind === "agent").map(([id]) => id);
    if (agents.length > 0) {
      throw new NervaError(
        ErrorCode.INVALID_OPTIONS,
        `Invalid options.runtime: graph "${graph.name}" has agent nodes (${agents.join(", ")}), whose handlers run on a runtime. Pass runtime: an AgentRuntime with those handlers registered (e.g. new InProcessRuntime()).`,
        { issues: [{ path: "options.runtime", message: "required with agent nodes" }] },
      );
    }
    runtime = new InProcessRuntime();
  }
  return { ...options, queue, runtime };
}
