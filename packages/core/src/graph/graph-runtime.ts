import { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError, parseOrThrow } from "../errors.js";
import { checkUntrustedJson } from "../internal/json-limits.js";
import { toJsonText } from "../runs/json-value.js";
import { RunQueue } from "../runs/run-queue.js";
import { RunStatus, type RunRecord } from "../runs/types.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import type { EntryPoint, EntryPointInfo } from "./entry-points.js";
import { EventBus, type EventHandler, type SubscribeOptions } from "./event-bus.js";
import { EventProjector, EventType, type GraphEvent } from "./events.js";
import { toExecutionResult, type ExecutionResult } from "./execution-result.js";
import { GraphExecutor } from "./executor.js";
import {
  GraphRuntimeOptionsSchema,
  type GraphRuntimeOptions,
  type ParsedGraphRuntimeOptions,
} from "./runtime-options.js";
import { Triggers } from "./triggers.js";
import { checkAnswer } from "./answers.js";
import { buildStreams, checkBacklog, type Stream } from "./entry-streams.js";
import { ExecutionWatcher } from "./execution-watcher.js";
import { graphHandler, handlerRuntime } from "./graph-handler.js";
import { FIX_STATE, planStart } from "./session-start.js";
import {
  signSession,
  storedSessionKey,
  type SessionPayload,
  type SessionState,
} from "./session-state.js";
import { SharedState } from "./shared-state.js";
import type { Graph } from "./types.js";

/** Per-call options of `trigger` and `triggerAndWait`. */
export interface TriggerOptions {
  /** Resume a paused execution from its portable, signed state. */
  readonly sessionState?: unknown;
  /** One execution per key and entry point (e.g. a webhook delivery id). */
  readonly idempotencyKey?: string;
  /** For `triggerAndWait`: give up waiting (TIMEOUT) after this long; the execution goes on. */
  readonly timeoutSeconds?: number;
}

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
  #key: Promise<Buffer> | null = null;
  #running = false;
  #published = 0;

  constructor(options: GraphRuntimeOptions) {
    const o = parseOrThrow(
      GraphRuntimeOptionsSchema,
      options,
      ErrorCode.INVALID_OPTIONS,
      "options",
      "Pass { graph: defineGraph(...), runtime: AgentRuntime, queue: RunQueue, entryPoints?, tools?, memory?, policy?, concurrency?, leaseSeconds?, heartbeatSeconds?, runner? }.",
    );
    this.#o = o;
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
    return (await this.#admit(entryPointId, input, ctx, options, [])).id;
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

  /** Triggers the webhook entry point whose path is `path` with `body` as start state. */
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
    return this.#result(run);
  }

  /** The execution `id` as it is now (`null` for an unknown id). */
  async getExecution(id: string): Promise<ExecutionResult | null> {
    const run = await this.#o.queue.get(id);
    return run === null || run.handlers[0] !== this.graph.name ? null : this.#result(run);
  }

  /** Cancels execution `id`: a running node's `ctx.signal` aborts; it ends `cancelled`. */
  async cancel(id: string, options: { reason?: string } = {}): Promise<ExecutionResult> {
    await this.#known(id);
    return this.#result(await this.#o.queue.cancel(id, options));
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
    this.#watcher.watch(resumed);
    return this.#result(resumed);
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
  async *events(
    id: string,
    options: { afterSeq?: number; types?: readonly EventType[]; signal?: AbortSignal } = {},
  ): AsyncGenerator<GraphEvent, void, undefined> {
    const run = await this.#known(id);
    const projector = new EventProjector(id, run.input.args.entryPoint ?? "default", this.#nodeIds);
    const types = options.types === undefined ? null : new Set<string>(options.types);
    // Replay from the start so the projector knows which nodes run, then skip what was asked.
    const after = options.afterSeq ?? 0;
    for await (const e of this.#o.queue.events(
      id,
      options.signal === undefined ? {} : { signal: options.signal },
    )) {
      const g = projector.project(e);
      if (g !== null && e.seq > after && (types === null || types.has(g.type))) yield g;
    }
  }

  getEntryPoints(): EntryPointInfo[] {
    return [...this.#streams.values()].map((s) => ({
      id: s.ep.id,
      name: s.ep.name ?? s.ep.id,
      entryNode: s.ep.entryNode ?? this.graph.entry,
      trigger: s.ep.trigger,
      concurrency: s.ep.concurrency,
      backlog: s.ep.backlog,
      queue: s.queue.name,
    }));
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
      entryPoints: Object.fromEntries(
        [...this.#streams.values()].map((s) => [
          s.ep.id,
          {
            triggered: s.triggered,
            rateLimited: s.rateLimited,
            active: s.runner?.activeCount ?? 0,
          },
        ]),
      ),
      watched: this.#watcher.size,
      subscribers: this.#bus.size,
      eventsPublished: this.#published,
    };
  }

  /** How many events subscription `id` has lost to its full buffer (`null`: no such id). */
  missedEvents(id: string): number | null {
    return this.#bus.stats(id)?.missedTotal ?? null;
  }

  /** Admits one execution (backlog check, then enqueue) for trigger, timers and events. */
  async #admit(
    entryPointId: string,
    input: unknown,
    ctx: ExecContext,
    options: TriggerOptions,
    chain: readonly string[],
  ): Promise<RunRecord> {
    const stream = this.#streams.get(entryPointId);
    if (stream === undefined) {
      throw new NervaError(
        ErrorCode.NOT_FOUND,
        `Unknown entry point "${entryPointId}" (entry points: ${[...this.#streams.keys()].join(", ")}).`,
      );
    }
    if (!(ctx instanceof ExecContext)) {
      throw new NervaError(ErrorCode.INVALID_INPUT, "Invalid ctx: must be an ExecContext.", {
        issues: [{ path: "ctx", message: "must be an ExecContext" }],
      });
    }
    checkUntrustedJson(input, "input", FIX_STATE);
    const start = await planStart(
      this.graph,
      this.#executor,
      stream.ep.entryNode ?? this.graph.entry,
      input,
      options.sessionState,
      () => this.#sessionKey(),
    );
    const message = toJsonText(start.payload, "input", stream.queue.maxStepBytes, FIX_STATE);
    const idempotencyKey = options.idempotencyKey ?? start.idempotencyKey;
    const admit = async (): Promise<RunRecord> => {
      await checkBacklog(stream, this.graph.name);
      const run = await stream.queue.enqueue({
        handler: this.graph.name,
        input: {
          message,
          args: {
            graph: this.graph.name,
            entryPoint: stream.ep.id,
            trigger: stream.ep.trigger.type,
            chain: [...chain, stream.ep.id].join(","),
          },
        },
        ctx,
        priority: stream.ep.priority,
        ...(idempotencyKey === undefined
          ? {}
          : { idempotencyKey: `${stream.ep.id}:${idempotencyKey}` }),
        ...(stream.ep.timeoutSeconds === undefined
          ? {}
          : { timeoutSeconds: stream.ep.timeoutSeconds }),
      });
      stream.triggered += 1;
      return run;
    };
    const done = stream.admitting.then(admit, admit);
    stream.admitting = done.catch(() => undefined);
    const run = await done;
    this.#watcher.watch(run);
    if (start.supersedes !== null) {
      // The paused run the sessionState came from, if it lives in this store, is done with.
      await this.#o.queue
        .cancel(start.supersedes, { reason: `resumed from its sessionState as ${run.id}` })
        .catch(() => undefined);
    }
    return run;
  }

  /** The start payload of an execution: a fresh state, or a verified sessionState. */
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

  #result(run: RunRecord): Promise<ExecutionResult> {
    if (run.status !== RunStatus.PAUSED) return Promise.resolve(toExecutionResult(run, unsigned));
    return this.#sessionKey().then((key) =>
      toExecutionResult(run, (p: SessionPayload) => signSession(key, p)),
    );
  }

  #sessionKey(): Promise<Buffer> {
    const given = this.#o.sessionKey;
    this.#key ??=
      given !== undefined
        ? Promise.resolve(Buffer.from(given))
        : storedSessionKey(
            new RunQueue({
              store: this.#o.queue.store,
              name: `${this.#o.queue.name}.keys`.slice(0, 64),
            }),
            ExecContext.create(),
          );
    return this.#key;
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
    return this.#admit(
      ep.id,
      input,
      ExecContext.create({ metadata: { trigger: "event" } }),
      {
        idempotencyKey: `event:${event.executionId}:${event.seq}`,
      },
      this.chainOf(event.executionId),
    );
  }

  /** Used by timers: admits the execution of one schedule slot. */
  triggerSlot(ep: EntryPoint, slot: number, input: Record<string, unknown>): Promise<RunRecord> {
    return this.#admit(
      ep.id,
      input,
      ExecContext.create({ metadata: { trigger: "timer" } }),
      {
        idempotencyKey: `timer:${slot}`,
      },
      [],
    );
  }

  /** An execution starts in this process: follow it on the bus when anybody listens. */
  async #onStart(ctx: ExecContext): Promise<void> {
    const run = ctx.run;
    if (run === null || this.#watcher.has(run.runId) || this.#bus.size === 0) return;
    const record = await this.#o.queue.get(run.runId);
    if (record !== null) this.#watcher.watch(record);
  }

  #error(err: unknown): void {
    this.#o.onError?.(err);
  }
}

function unsigned(p: SessionPayload): SessionState {
  return { ...p, sig: "" };
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
