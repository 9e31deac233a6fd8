import { randomUUID } from "node:crypto";
import type { ExecContext } from "../../context/exec-context.js";
import { ErrorCode, NervaError, parseOrThrow } from "../../errors.js";
import type { AgentInput, AgentInputInit, AgentResult } from "../../types/agent.js";
import { runChain } from "../chain.js";
import type { CircuitSnapshot } from "../circuit-breaker.js";
import { runDelegate, type DelegationOptions } from "../delegate.js";
import { checkInvokeArgs, invokeGuarded, type GuardedHandler } from "../guard.js";
import { HandlerNameSchema, makeBreaker } from "../options.js";
import { errorResult, messageOf } from "../results.js";
import type { AgentRuntime } from "../types.js";
import {
  connectDocker,
  dockerError,
  removeContainer,
  removeOrphans,
  type Container,
  type Docker,
} from "./docker.js";
import { runFramedCall } from "./framed-call.js";
import {
  parseHandlerOptions,
  parseRuntimeOptions,
  type ContainerHandlerOptions,
  type ContainerRuntimeOptions,
  type ResolvedRuntimeOptions,
} from "./options.js";
import { createOptions, handlerSpec, type HandlerSpec } from "./spec.js";
import { runStdioCall, type ContainerHost } from "./stdio.js";
import { WarmPool } from "./warm-pool.js";

interface Entry extends GuardedHandler {
  readonly spec: HandlerSpec;
  readonly pool: WarmPool | null;
}

/**
 * What {@link ContainerRuntime.start} reports.
 *
 * @example
 * const { removedOrphans, warmContainers } = await runtime.start();
 */
export interface ContainerRuntimeStartInfo {
  /** Ids of containers left behind by crashed host processes and removed at start. */
  readonly removedOrphans: readonly string[];
  /** Warm containers running once start() returned. */
  readonly warmContainers: number;
}

/**
 * Runs each handler in a Docker container: full OS isolation for multi-tenant systems and
 * user-supplied code, with a memory limit, a CPU limit, no network by default, a read-only root
 * filesystem and a process limit.
 *
 * - `per-call` handlers get a fresh container per invoke. A `stdio` handler reads the AgentInput
 *   JSON on stdin and prints its result on stdout (exit code 0 success, 2 wrong handler, anything
 *   else error); the request context arrives as NERVA_* environment variables. A `module` handler
 *   runs under the Nerva agent and may stream, delegate and report token usage.
 * - `warm` handlers run in long-lived containers (up to `poolSize` per handler) whose Nerva agent
 *   speaks the framed worker protocol, so an invoke costs no container start.
 *
 * A timeout or a cancel kills the container (SIGKILL through the engine), not just the
 * connection to it. Containers are removed when they fail and on `close()`; every container
 * carries labels naming this runtime and its owner process, and containers whose owner process
 * is gone (a crashed host) are removed at start. dockerode is loaded on first use (an optional
 * peer dependency).
 *
 * @example
 * const runtime = new ContainerRuntime({ timeoutSeconds: 30 });
 * runtime.register("my_agent", { image: "my-agent:1.0", memoryLimit: "256m", cpuLimit: "1.0", networkMode: "none" });
 * const result = await runtime.invoke("my_agent", { message: "hello" }, ExecContext.create());
 * await runtime.close();
 */
export class ContainerRuntime implements AgentRuntime {
  readonly #options: ResolvedRuntimeOptions;
  readonly #delegation: DelegationOptions;
  readonly #handlers = new Map<string, Entry>();
  readonly #known = (): readonly string[] => this.handlerNames();
  readonly #live = new Map<string, Container>();
  readonly #creating = new Set<Promise<Container>>();
  /** Removals in flight, by container id (one per container however often it is discarded). */
  readonly #cleanups = new Map<string, Promise<void>>();
  readonly #host: ContainerHost;
  #docker: Promise<Docker> | null = null;
  #removedOrphans: string[] = [];
  #closed = false;

  constructor(options: ContainerRuntimeOptions = {}) {
    this.#options = parseRuntimeOptions(options);
    this.#delegation = {
      maxDelegationDepth: this.#options.maxDelegationDepth,
      delegationPolicy: this.#options.delegationPolicy,
    };
    const instanceId = randomUUID();
    this.#host = {
      labelPrefix: this.#options.labelPrefix,
      instanceId,
      maxOutputBytes: this.#options.maxOutputBytes,
      docker: () => this.#ready(),
      create: (spec, env) => this.#create(spec, env),
      discard: (container) => this.#discard(container),
    };
  }

  /**
   * Registers a container handler. Throws NervaError INVALID_OPTIONS naming the field for bad
   * options (a memory limit like "lots", a CPU limit ≤ 0...), DUPLICATE_HANDLER for a name in use.
   *
   * @example
   * runtime.register("summarise", { image: "summariser:2", mode: "warm", poolSize: 2, module: "/app/handler.mjs" });
   */
  register(name: string, options: ContainerHandlerOptions): this {
    parseOrThrow(
      HandlerNameSchema,
      name,
      ErrorCode.INVALID_OPTIONS,
      "name",
      'Pick a name like "flight_agent".',
    );
    if (this.#handlers.has(name)) {
      throw new NervaError(
        ErrorCode.DUPLICATE_HANDLER,
        `Handler "${name}" is already registered. Use another name, or create a new runtime to replace it.`,
        { issues: [{ path: "name", message: "already registered" }] },
      );
    }
    if (this.#closed) {
      throw new NervaError(
        ErrorCode.INVALID_OPTIONS,
        `Cannot register "${name}": the runtime is closed. Create a new ContainerRuntime.`,
      );
    }
    const o = parseHandlerOptions(name, options);
    const spec = handlerSpec(name, o);
    this.#handlers.set(name, {
      spec,
      timeoutSeconds: o.timeoutSeconds ?? this.#options.timeoutSeconds,
      breaker: makeBreaker(this.#options.circuitBreaker, o.circuitBreaker),
      pool: o.mode === "warm" ? new WarmPool(this.#host, spec, o.poolSize ?? 1, this) : null,
    });
    return this;
  }

  handlerNames(): readonly string[] {
    return [...this.#handlers.keys()];
  }

  /** The description given at registration, if any. */
  describe(name: string): string | undefined {
    return this.#handlers.get(name)?.spec.options.description;
  }

  /** State of the handler's circuit breaker (`undefined` if it has none). */
  circuit(name: string): CircuitSnapshot | undefined {
    return this.#handlers.get(name)?.breaker?.snapshot();
  }

  /** Value of the `<labelPrefix>.instance` label on every container of this runtime. */
  get instanceId(): string {
    return this.#host.instanceId;
  }

  /** Ids of the containers this runtime currently holds (running or being created). */
  containerIds(): readonly string[] {
    return [...this.#live.keys()];
  }

  /**
   * Connects to the engine, removes orphaned containers and fills every warm pool. Optional:
   * the first invoke does the same lazily, but then pays for it. Rejects with a NervaError when
   * the engine cannot be reached.
   *
   * @example
   * const { removedOrphans } = await runtime.start();
   */
  async start(): Promise<ContainerRuntimeStartInfo> {
    this.#assertOpen("start");
    await this.#ready();
    const pools = [...this.#handlers.values()].flatMap((e) => (e.pool === null ? [] : [e.pool]));
    await Promise.all(pools.map((p) => p.fill()));
    return {
      removedOrphans: [...this.#removedOrphans],
      warmContainers: pools.reduce((n, p) => n + p.size, 0),
    };
  }

  invoke(handler: string, input: AgentInputInit, ctx: ExecContext): Promise<AgentResult> {
    let agentInput: AgentInput;
    try {
      agentInput = checkInvokeArgs(handler, input, ctx);
    } catch (err) {
      return Promise.reject(err);
    }
    if (this.#closed) {
      return Promise.resolve(
        errorResult(handler, `ContainerRuntime is closed; handler "${handler}" cannot run.`),
      );
    }
    const entry = this.#handlers.get(handler);
    return invokeGuarded(
      handler,
      entry,
      this.#known,
      agentInput,
      ctx,
      (i, scoped) => {
        const e = entry as Entry;
        if (e.pool !== null) return e.pool.invoke(i, scoped);
        if (e.spec.protocol === "framed") return runFramedCall(this.#host, e.spec, i, scoped, this);
        return runStdioCall(this.#host, e.spec, i, scoped);
      },
      "client",
    );
  }

  invokeChain(
    handlers: readonly string[],
    input: AgentInputInit,
    ctx: ExecContext,
  ): Promise<AgentResult> {
    return runChain(this, handlers, input, ctx);
  }

  delegate(handler: string, input: AgentInputInit, parentCtx: ExecContext): Promise<AgentResult> {
    return runDelegate(this, this.#delegation, handler, input, parentCtx);
  }

  /**
   * Kills and removes every container this runtime started (warm pools included) and waits
   * until the engine confirms. Later invokes return an ERROR result. Safe to call twice.
   */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#docker !== null) await this.#docker.catch(() => undefined);
    // Creations in flight end up in #live (or are discarded at once): wait for them first.
    await Promise.allSettled([...this.#creating]);
    await Promise.all([...this.#handlers.values()].map((e) => e.pool?.close()));
    for (const container of this.#live.values()) void this.#discard(container);
    while (this.#cleanups.size > 0) await Promise.all([...this.#cleanups.values()]);
  }

  #assertOpen(action: string): void {
    if (this.#closed) {
      throw new NervaError(
        ErrorCode.INVALID_OPTIONS,
        `Cannot ${action}: the ContainerRuntime is closed.`,
      );
    }
  }

  /** Connects once (retrying after a failure) and sweeps orphans before the first container. */
  #ready(): Promise<Docker> {
    if (this.#docker !== null) return this.#docker;
    const attempt = (async () => {
      const docker = await connectDocker(this.#options.docker);
      try {
        await docker.ping();
        if (this.#options.removeOrphans) {
          this.#removedOrphans = await removeOrphans(docker, this.#options.labelPrefix);
        }
      } catch (err) {
        throw new NervaError(ErrorCode.INTERNAL, dockerError("reach the engine", err), {
          cause: err,
        });
      }
      return docker;
    })();
    this.#docker = attempt;
    attempt.catch(() => {
      // Let a later call try again (dockerd may come up after the runtime was built).
      if (this.#docker === attempt) this.#docker = null;
    });
    return attempt;
  }

  #create(spec: HandlerSpec, env: readonly string[]): Promise<Container> {
    const creating = (async () => {
      const docker = await this.#ready();
      if (this.#closed) throw new Error("ContainerRuntime is closed");
      let container: Container;
      try {
        container = await docker.createContainer(
          createOptions(spec, this.#options.labelPrefix, this.#host.instanceId, env),
        );
      } catch (err) {
        throw new Error(dockerError(`create a container from image "${spec.options.image}"`, err), {
          cause: err,
        });
      }
      if (this.#closed) {
        void this.#discard(container);
        throw new Error("ContainerRuntime is closed");
      }
      this.#live.set(container.id, container);
      return container;
    })();
    this.#creating.add(creating);
    void creating.catch(() => undefined).finally(() => this.#creating.delete(creating));
    return creating;
  }

  #discard(container: Container): Promise<void> {
    const running = this.#cleanups.get(container.id);
    if (running !== undefined) return running;
    const cleanup = removeContainer(container)
      .catch((err: unknown) => {
        // The engine refusing a removal must not crash the host; the orphan sweep of the next
        // start will catch what is left.
        process.emitWarning(
          `ContainerRuntime could not remove container ${container.id.slice(0, 12)}: ${messageOf(err)}`,
        );
      })
      .finally(() => {
        this.#live.delete(container.id);
        this.#cleanups.delete(container.id);
      });
    this.#cleanups.set(container.id, cleanup);
    return cleanup;
  }
}
