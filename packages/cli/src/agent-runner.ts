import { isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import {
  ErrorCode,
  ExecContext,
  GraphHost,
  InMemoryRunStore,
  InProcessRuntime,
  NervaError,
  RunQueue,
  type AgentHandler,
  type AgentRuntime,
  type Graph,
  type GraphHostOptions,
  type GraphRun,
  type RunStore,
  type ToolManager,
} from "@nerva/core";
import type { EntryPointSpec, SessionState, TriggerOptions } from "@nerva/core/graph";
import type { TraceSink } from "@nerva/core/tracing";
import { parseAgentConfig, type AgentConfig, type StoreConfig } from "./agent-config.js";

/**
 * What a module for `AgentRunner.load` and `nerva run` exports (or its default export holds):
 * the graph, and optionally handlers for its agent nodes, entry points, tools and config.
 *
 * @example
 * // agents/refund-desk.ts
 * export const graph = defineGraph({ ... });
 * export const handlers = { intake_agent: async (input) => "ok" };
 * export const config = { store: { sqlite: "runs.db" } };
 */
export interface AgentModule {
  readonly graph: Graph;
  /** Registered on an InProcessRuntime the agent nodes use (unless `runtime` is given). */
  readonly handlers?: Readonly<Record<string, AgentHandler>>;
  /** The runtime agent nodes use instead (e.g. a SubprocessRuntime). */
  readonly runtime?: AgentRuntime;
  readonly entryPoints?: readonly EntryPointSpec[];
  readonly tools?: ToolManager;
  readonly config?: AgentConfig;
}

/** Options of {@link AgentRunner.load}: they win over the module's `config`. */
export interface AgentRunnerOptions extends AgentConfig {
  /** An open store to use instead of the configured one (the runner does not close it). */
  readonly runStore?: RunStore;
  /** Where the runs' spans and events go (the GraphHost's `traceSink`). */
  readonly traceSink?: TraceSink | null;
  /** More GraphHost options (memory, policy, onError...). */
  readonly runtimeOptions?: Partial<GraphHostOptions>;
}

function moduleError(path: string, why: string): NervaError {
  return new NervaError(
    ErrorCode.INVALID_OPTIONS,
    `Invalid agent module ${path}: ${why}. Export { graph } (from defineGraph) and optionally handlers, entryPoints, tools, config — or a default export with those keys.`,
    { issues: [{ path: "module", message: why }] },
  );
}

/**
 * What `nerva run`, `nerva resume` and `nerva dashboard` stand on: loads an agent module (its
 * graph and config), builds the GraphHost, and runs it. Disposable: `await using runner = await AgentRunner.load(path)`.
 *
 * @example
 * await using runner = await AgentRunner.load("./agents/refund-desk.ts");
 * const result = await runner.run({ orderId: "42" });
 * if (result.status === "paused") await runner.run({ decision: "approved" }, { sessionState: result.sessionState });
 */
export class AgentRunner {
  readonly runtime: GraphHost;
  readonly queue: RunQueue;
  readonly module: AgentModule;
  readonly #ownsStore: boolean;
  #closed = false;

  private constructor(
    module: AgentModule,
    runtime: GraphHost,
    queue: RunQueue,
    ownsStore: boolean,
  ) {
    this.module = module;
    this.runtime = runtime;
    this.queue = queue;
    this.#ownsStore = ownsStore;
  }

  /** Imports the module at `path` (or takes a module object) and builds its runtime. */
  static async load(
    path: string | AgentModule,
    options: AgentRunnerOptions = {},
  ): Promise<AgentRunner> {
    const label = typeof path === "string" ? path : "(object)";
    if (typeof options !== "object" || options === null || Array.isArray(options)) {
      throw new NervaError(
        ErrorCode.INVALID_OPTIONS,
        "Invalid options: must be an object. Pass { store?, queue?, concurrency?, leaseSeconds?, heartbeatSeconds?, sessionKey?, runStore?, traceSink?, runtimeOptions? }.",
        { issues: [{ path: "options", message: "must be an object" }] },
      );
    }
    if (typeof path !== "string" && (typeof path !== "object" || path === null)) {
      throw moduleError("(argument)", "pass the module's path or the module object");
    }
    let mod: AgentModule;
    if (typeof path === "string") {
      const url = pathToFileURL(isAbsolute(path) ? path : resolve(process.cwd(), path)).href;
      const imported = (await import(url)) as Record<string, unknown>;
      const d = imported.default as Record<string, unknown> | undefined;
      mod = (imported.graph === undefined && typeof d === "object" && d !== null
        ? d
        : imported) as unknown as AgentModule;
    } else {
      mod = path;
    }
    // Checked before a store is opened, so a bad module creates no file. defineGraph brands
    // its graphs with Symbol.for("nerva.graph"), the same key in every build of @nerva/core.
    if (!isDefinedGraph(mod.graph)) {
      throw moduleError(
        label,
        mod.graph === undefined
          ? "it exports no graph"
          : "its graph was not made by defineGraph (a graph-shaped object is not enough)",
      );
    }
    const { runStore, traceSink, runtimeOptions, ...overrides } = options;
    const config = parseAgentConfig({ ...(mod.config ?? {}), ...overrides });
    let agents = mod.runtime;
    if (agents === undefined) {
      const own = new InProcessRuntime();
      for (const [name, handler] of Object.entries(mod.handlers ?? {})) own.register(name, handler);
      agents = own;
    }
    const store = runStore ?? (await openStore(config.store ?? "memory"));
    const queue = new RunQueue({
      store,
      name: config.queue ?? mod.graph.name.replace(/[^A-Za-z0-9_.-]/g, "_"),
    });
    const runtime = new GraphHost({
      graph: mod.graph,
      runtime: agents,
      queue,
      ...(mod.tools === undefined ? {} : { tools: mod.tools }),
      ...(mod.entryPoints === undefined ? {} : { entryPoints: [...mod.entryPoints] }),
      runner: {
        ...(config.concurrency === undefined ? {} : { concurrency: config.concurrency }),
        ...(config.leaseSeconds === undefined ? {} : { leaseSeconds: config.leaseSeconds }),
        ...(config.heartbeatSeconds === undefined
          ? {}
          : { heartbeatSeconds: config.heartbeatSeconds }),
        ...(traceSink === undefined ? {} : { traceSink }),
      },
      ...(config.sessionKey === undefined ? {} : { sessionKey: config.sessionKey }),
      ...runtimeOptions,
    });
    return new AgentRunner(mod, runtime, queue, runStore === undefined);
  }

  /**
   * Runs one run of the graph and waits until it succeeds, fails or pauses (starting the host on
   * first use). Answer a paused one with {@link resume}.
   */
  async run(
    input: Record<string, unknown> = {},
    options: TriggerOptions & { entryPoint?: string; ctx?: ExecContext } = {},
  ): Promise<GraphRun> {
    await this.start();
    const { entryPoint, ctx, ...rest } = options;
    return this.runtime.triggerAndWait(
      entryPoint ?? this.#defaultEntry(),
      input,
      ctx ?? ExecContext.create(),
      rest,
    );
  }

  /**
   * Answers a paused run (by its id, or by its signed `sessionState`) and waits until it
   * succeeds, fails or pauses again.
   */
  async resume(
    target: string | SessionState,
    answer: unknown,
    options: { ctx?: ExecContext; timeoutSeconds?: number } = {},
  ): Promise<GraphRun> {
    await this.start();
    const resumed = await this.runtime.resume(
      target,
      answer,
      options.ctx === undefined ? {} : { ctx: options.ctx },
    );
    return this.runtime.wait(
      resumed.runId,
      options.timeoutSeconds === undefined ? {} : { timeoutSeconds: options.timeoutSeconds },
    );
  }

  /** Starts a run without waiting; returns its id. */
  async trigger(
    entryPoint: string,
    input: Record<string, unknown> = {},
    ctx?: ExecContext,
  ): Promise<string> {
    await this.start();
    return this.runtime.trigger(entryPoint, input, ctx ?? ExecContext.create());
  }

  getEntryPoints(): ReturnType<GraphHost["getEntryPoints"]> {
    return this.runtime.getEntryPoints();
  }

  async start(): Promise<void> {
    if (this.#closed)
      throw new NervaError(
        ErrorCode.INVALID_STATE,
        "This AgentRunner was cleaned up; load the module again.",
      );
    await this.runtime.start();
  }

  async stop(options: { graceSeconds?: number } = {}): Promise<void> {
    await this.runtime.stop(options);
  }

  /** Stops the runtime and closes the store it opened. Safe to call twice. */
  async cleanup(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.runtime[Symbol.asyncDispose]();
    if (this.#ownsStore) await this.queue.store.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.cleanup();
  }

  #defaultEntry(): string {
    const eps = this.runtime.getEntryPoints();
    return (eps.find((e) => e.id === "default") ?? eps[0])?.id ?? "default";
  }
}

async function openStore(config: StoreConfig): Promise<RunStore> {
  if (config === "memory") return new InMemoryRunStore();
  const { SqliteRunStore } = await import("@nerva/core/sqlite");
  return new SqliteRunStore({ path: config.sqlite });
}

function isDefinedGraph(value: unknown): value is Graph {
  return (
    typeof value === "object" &&
    value !== null &&
    (value as Record<symbol, unknown>)[Symbol.for("nerva.graph")] === true
  );
}
