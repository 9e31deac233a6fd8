import { statSync } from "node:fs";
import { resolve as resolvePath } from "node:path";
import type { ExecContext } from "../../context/exec-context.js";
import { ErrorCode, NervaError, parseOrThrow } from "../../errors.js";
import type { AgentInput, AgentInputInit, AgentResult } from "../../types/agent.js";
import { agentResult } from "../../types/agent.js";
import { AgentStatus } from "../../types/status.js";
import { runChain } from "../chain.js";
import type { CircuitSnapshot } from "../circuit-breaker.js";
import { runDelegate, type DelegationOptions } from "../delegate.js";
import { checkInvokeArgs, invokeGuarded, type GuardedHandler } from "../guard.js";
import { makeBreaker } from "../options.js";
import { errorResult } from "../results.js";
import type { AgentRuntime } from "../types.js";
import { resolveConfinement } from "./confinement.js";
import type { ConfinementMode, Launcher } from "./launcher.js";
import { baseEnv } from "./env.js";
import { runExecutable } from "./executable.js";
import { ForkServerPool } from "./fork-server.js";
import { HandlerKind, scanHandlerDir, type HandlerFile, type HandlerScan } from "./handler-dir.js";
import type { ProcessSource } from "./handler-process.js";
import {
  SubprocessRuntimeOptionsSchema,
  type ResolvedSubprocessOptions,
  type SubprocessRuntimeOptions,
} from "./options.js";
import { secretValues } from "../../internal/secrets.js";
import { quoteTail, type TailBuffer } from "./output.js";
import { WorkerPool, type PoolStats } from "./pool.js";
import { SpareLauncher } from "./spare.js";

interface Entry extends GuardedHandler {
  readonly file: HandlerFile;
}

/** What a runner tells the runtime about the process of one invocation. */
interface Observation {
  pid?: number;
  stderr?: TailBuffer;
  /** Resolves once the process has exited (an executable's result may come first). */
  exited?: Promise<void>;
}

/** What {@link SubprocessRuntime.stats} reports. */
export interface SubprocessStats {
  readonly pool: PoolStats;
  /** Executable handlers running right now, by pid. */
  readonly executables: readonly number[];
}

const FIX =
  "handlerDir is an existing directory; pool { min <= max }; maxOutputBytes >= 1024; env { allow: names or prefixes*, set: { NAME: value } }; memoryLimitMb >= 16; cancelGraceSeconds 0-0.1; confinement auto, user-namespace, pid-namespace, capabilities or none.";

/**
 * Runs handlers in child processes, for crash isolation and untrusted or foreign-language code.
 * Handlers are files in `handlerDir`:
 * - `<name>.js` / `.mjs` / `.cjs` modules (default export or `handler` export, same signature as
 *   an in-process handler) run in a **warm pool** of long-lived Node workers: no process start per
 *   call; workers are recycled after `maxInvocationsPerWorker` calls or `idleSeconds` idle;
 * - any other file is an **executable** run once per call (AgentInput JSON on stdin, result on
 *   stdout, exit code 0 / 2 / other), in any language.
 *
 * Every process gets only the allowlisted environment (the host's secrets stay in the host), runs
 * in its own process group, and is SIGKILLed with its group at its deadline or on cancel. Crashes,
 * exits, signals, memory limits and output floods become ERROR results that say which; stderr is
 * drained and its tail attached. See docs/subprocess-runtime.md and docs/protocol.md.
 *
 * @example
 * const runtime = new SubprocessRuntime({ handlerDir: "./agents", timeoutSeconds: 30 });
 * const result = await runtime.invoke("my_agent", { message: "hello" }, ExecContext.create());
 * await runtime.close();
 */
export class SubprocessRuntime implements AgentRuntime {
  /** Absolute path of the handler directory. */
  readonly handlerDir: string;
  readonly #options: ResolvedSubprocessOptions;
  readonly #delegation: DelegationOptions;
  readonly #env: Readonly<Record<string, string>>;
  /** Values masked wherever a child's stderr is quoted (see `secretValues`). */
  readonly #secrets: readonly string[];
  readonly #launcher: Launcher;
  /**
   * Where executables' processes come from: fork servers (namespace modes), else per-call
   * launchers started ahead of need; created when the first executable runs.
   */
  #source: ProcessSource | null = null;
  readonly #entries = new Map<string, Entry>();
  #conflicts: HandlerScan["conflicts"] = new Map();
  readonly #pool: WorkerPool;
  readonly #executables = new Map<Promise<AgentResult>, Observation>();
  readonly #known = (): readonly string[] => this.handlerNames();
  #nextId = 0;
  #closed = false;

  constructor(options: SubprocessRuntimeOptions) {
    const o = parseOrThrow(
      SubprocessRuntimeOptionsSchema,
      options,
      ErrorCode.INVALID_OPTIONS,
      "options",
      FIX,
    );
    this.#options = o;
    this.handlerDir = resolvePath(o.handlerDir);
    let isDir: boolean;
    try {
      isDir = statSync(this.handlerDir).isDirectory();
    } catch {
      isDir = false;
    }
    if (!isDir) {
      throw new NervaError(
        ErrorCode.INVALID_OPTIONS,
        `Invalid options.handlerDir: ${this.handlerDir} is not an existing directory. Point it at the folder holding your handler files.`,
        { issues: [{ path: "options.handlerDir", message: "must be an existing directory" }] },
      );
    }
    this.#delegation = {
      maxDelegationDepth: o.maxDelegationDepth,
      delegationPolicy: o.delegationPolicy,
    };
    this.#env = Object.freeze(baseEnv(o.env.allow, o.env.set));
    this.#secrets = secretValues(o.env.set, this.#env);
    this.#launcher = resolveConfinement(o.confinement);
    const scan = this.#rescan();
    if (scan.conflicts.size > 0) {
      const [name, files] = [...scan.conflicts][0] as [string, readonly string[]];
      throw new NervaError(
        ErrorCode.INVALID_OPTIONS,
        `Invalid options.handlerDir: handler "${name}" is claimed by several files (${files.join(", ")}). Keep one file per handler name.`,
        { issues: [{ path: "options.handlerDir", message: `conflicting files for "${name}"` }] },
      );
    }
    for (const name of Object.keys(o.handlers)) {
      if (!this.#entries.has(name)) {
        throw new NervaError(
          ErrorCode.INVALID_OPTIONS,
          `Invalid options.handlers.${name}: there is no handler file for "${name}" in ${this.handlerDir} (found: ${this.handlerNames().join(", ") || "none"}).`,
          { issues: [{ path: `options.handlers.${name}`, message: "no such handler file" }] },
        );
      }
    }
    this.#pool = new WorkerPool(
      {
        min: o.pool.min,
        max: o.pool.max,
        idleSeconds: o.pool.idleSeconds,
        maxInvocationsPerWorker: o.maxInvocationsPerWorker,
      },
      {
        nodePath: o.nodePath ?? process.execPath,
        cwd: this.handlerDir,
        env: this.#env,
        maxOutputBytes: o.maxOutputBytes,
        stderrTailBytes: o.stderrTailBytes,
        secrets: this.#secrets,
        memoryLimitMb: o.memoryLimitMb,
        cancelGraceMs: Math.round(o.cancelGraceSeconds * 1000),
        launcher: this.#launcher,
        startupTimeoutMs: 15_000,
      },
    );
    if (this.#hasModules()) void this.#pool.warmUp();
  }

  #hasModules(): boolean {
    for (const e of this.#entries.values()) if (e.file.kind === HandlerKind.MODULE) return true;
    return false;
  }

  /** Re-reads `handlerDir`: new files become handlers; breakers of known ones are kept. */
  #rescan(): HandlerScan {
    const scan = scanHandlerDir(this.handlerDir);
    const o = this.#options;
    for (const [name, file] of scan.handlers) {
      const known = this.#entries.get(name);
      if (known !== undefined && known.file.file === file.file) continue;
      const overrides = o.handlers[name] ?? {};
      this.#entries.set(name, {
        file,
        timeoutSeconds: overrides.timeoutSeconds ?? o.timeoutSeconds,
        breaker: makeBreaker(o.circuitBreaker, overrides.circuitBreaker),
      });
    }
    this.#conflicts = scan.conflicts;
    return scan;
  }

  /**
   * The confinement in use: what `options.confinement` asked for, or what `"auto"` found on this
   * machine (`"user-namespace"`, `"pid-namespace"`, `"capabilities"` or `"none"`).
   */
  get confinement(): ConfinementMode {
    return this.#launcher.mode;
  }

  /** Names of the handlers found in `handlerDir`. */
  handlerNames(): readonly string[] {
    return [...this.#entries.keys()];
  }

  /** Whether `name` runs in the worker pool (`module`) or as a process per call (`executable`). */
  kind(name: string): HandlerKind | undefined {
    return this.#entries.get(name)?.file.kind;
  }

  /** State of the handler's circuit breaker (`undefined` if it has none). */
  circuit(name: string): CircuitSnapshot | undefined {
    return this.#entries.get(name)?.breaker?.snapshot();
  }

  /** Worker pool and running executables, for monitoring and tests. */
  stats(): SubprocessStats {
    const executables: number[] = [];
    for (const obs of this.#executables.values()) {
      if (obs.pid !== undefined) executables.push(obs.pid);
    }
    return { pool: this.#pool.stats(), executables };
  }

  /** Starts `pool.min` workers now and resolves when they are ready. */
  warmUp(): Promise<void> {
    return this.#pool.warmUp();
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
        errorResult(handler, `SubprocessRuntime is closed: "${handler}" was not run.`),
      );
    }
    let entry = this.#entries.get(handler);
    if (entry === undefined) {
      this.#rescan();
      entry = this.#entries.get(handler);
      const files = this.#conflicts.get(handler);
      if (entry === undefined && files !== undefined) {
        return Promise.resolve(
          errorResult(
            handler,
            `Handler "${handler}" is claimed by several files (${files.join(", ")}); keep one.`,
          ),
        );
      }
    }
    const obs: Observation = {};
    const found = entry;
    return invokeGuarded(
      handler,
      found,
      this.#known,
      agentInput,
      ctx,
      (i, scoped) =>
        this.#execute(found as Entry, i, scoped, obs).then((result) => {
          // The child sees the same deadline and may answer (e.g. "aborted") a hair before the
          // host's timer fires: reading endReason settles a passed deadline first, as a TIMEOUT.
          void scoped.endReason;
          return result;
        }),
      "client",
    ).then((result) => decorateStopped(result, obs));
  }

  #execute(
    entry: Entry,
    input: AgentInput,
    scoped: ExecContext,
    obs: Observation,
  ): Promise<AgentResult> {
    const name = entry.file.name;
    const observe = (o: Observation): void => {
      Object.assign(obs, o);
    };
    const delegate = (h: string, i: AgentInput): Promise<AgentResult> =>
      runDelegate(this, this.#delegation, h, i, scoped);
    const o = this.#options;
    if (entry.file.kind === HandlerKind.MODULE) {
      return this.#pool.run({
        id: `i${++this.#nextId}`,
        handler: name,
        module: entry.file.file,
        input,
        scoped,
        delegate,
        onBlocked: () => undefined,
        observe,
      });
    }
    this.#source ??= this.#processSource();
    const running = runExecutable({
      handler: name,
      file: entry.file.file,
      cwd: this.handlerDir,
      input,
      scoped,
      baseEnv: this.#env,
      maxOutputBytes: o.maxOutputBytes,
      stderrTailBytes: o.stderrTailBytes,
      secrets: this.#secrets,
      memoryLimitMb: o.memoryLimitMb,
      cancelGraceMs: Math.round(o.cancelGraceSeconds * 1000),
      source: this.#source,
      delegate,
      observe,
    });
    this.#executables.set(running, obs);
    // Listed until its process has exited, which may be after the result (see runExecutable).
    void running.then(() => obs.exited).then(() => this.#executables.delete(running));
    return running;
  }

  #processSource(): ProcessSource {
    const launcher = this.#launcher;
    const o = this.#options;
    const limitKb = o.memoryLimitMb === undefined ? 0 : o.memoryLimitMb * 1024;
    const serve = launcher.forkServer;
    const servers =
      serve === null ? null : new ForkServerPool(() => serve(limitKb), this.handlerDir);
    const spares = launcher.hasInit ? new SpareLauncher(launcher, this.handlerDir, limitKb) : null;
    return { launcher, cwd: this.handlerDir, spares, servers };
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
   * Kills every worker and every running executable (with their process groups) and resolves
   * once all of them have exited. Later invokes return an ERROR result.
   */
  async close(): Promise<void> {
    this.#closed = true;
    const running = [...this.#executables.keys()];
    const exits: Promise<void>[] = [];
    for (const obs of this.#executables.values()) {
      if (obs.exited !== undefined) exits.push(obs.exited);
      if (obs.pid !== undefined) {
        try {
          process.kill(-obs.pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
    }
    await Promise.all([
      this.#pool.close(),
      this.#source?.spares?.close(),
      this.#source?.servers?.close(),
      ...running,
      ...exits,
    ]);
  }
}

/**
 * A result the guard built at a deadline or cancel (the process is being killed) gets the pid and
 * the stderr tail of that process, so a timeout says what the handler was doing.
 */
function decorateStopped(result: AgentResult, obs: Observation): AgentResult {
  if (result.status === AgentStatus.SUCCESS || obs.pid === undefined) return result;
  const error = result.error ?? "";
  if (error.includes("stderr:") || error.includes(`(pid ${obs.pid})`)) return result;
  if (result.status !== AgentStatus.TIMEOUT && !/cancelled/.test(error)) return result;
  const tail = obs.stderr?.text() ?? "";
  return agentResult(result.handler, {
    ...result,
    error: `${error} Its process (pid ${obs.pid}) and process group were killed.${tail === "" ? "" : ` stderr: ${quoteTail(tail)}`}`,
    data: tail === "" || "stderr" in result.data ? result.data : { ...result.data, stderr: tail },
  });
}
