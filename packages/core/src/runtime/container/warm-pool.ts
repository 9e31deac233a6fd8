import type { ExecContext } from "../../context/exec-context.js";
import type { AgentInput, AgentResult } from "../../types/agent.js";
import { errorResult, messageOf, thrownResult } from "../results.js";
import type { AgentRuntime } from "../types.js";
import { AGENT_START_MS, createFramedContainer } from "./framed-call.js";
import { FramedConnection } from "./framed.js";
import type { HandlerSpec } from "./spec.js";
import type { ContainerHost } from "./stdio.js";

interface Waiter {
  readonly resolve: (conn: FramedConnection) => void;
  readonly reject: (err: Error) => void;
}

/**
 * Long-lived containers of one warm handler: at most `size` of them, each serving one invocation
 * at a time. Containers start on demand (or all at once with `fill()`); callers beyond the limit
 * wait in order. A container that times out, is cancelled, dies or breaks the protocol is killed
 * and removed; the next caller gets a fresh one.
 */
export class WarmPool {
  readonly #host: ContainerHost;
  readonly #spec: HandlerSpec;
  readonly #max: number;
  readonly #runtime: AgentRuntime;
  readonly #idle: FramedConnection[] = [];
  readonly #all = new Set<FramedConnection>();
  readonly #waiters: Waiter[] = [];
  #starting = 0;
  #closed = false;

  constructor(host: ContainerHost, spec: HandlerSpec, max: number, runtime: AgentRuntime) {
    this.#host = host;
    this.#spec = spec;
    this.#max = max;
    this.#runtime = runtime;
  }

  /** Containers alive (idle or busy). */
  get size(): number {
    return this.#all.size;
  }

  /** Starts containers until the pool is full. Rejects if one cannot start. */
  async fill(): Promise<void> {
    const missing = this.#max - this.#all.size - this.#starting;
    const started = await Promise.allSettled(
      Array.from({ length: Math.max(0, missing) }, () => this.#spawn()),
    );
    for (const s of started) if (s.status === "fulfilled") this.#release(s.value);
    const failed = started.find((s): s is PromiseRejectedResult => s.status === "rejected");
    if (failed !== undefined) throw failed.reason;
  }

  async invoke(input: AgentInput, scoped: ExecContext): Promise<AgentResult> {
    let conn: FramedConnection;
    try {
      conn = await this.#acquire(scoped);
    } catch (err) {
      return thrownResult(this.#spec.name, err);
    }
    // Timeout or cancel: the container is killed, whatever the handler is doing.
    const stop = (): void => void conn.kill("was killed: the call timed out or was cancelled");
    if (scoped.signal.aborted) {
      this.#release(conn);
      return errorResult(this.#spec.name, "ended while waiting for a container");
    }
    scoped.signal.addEventListener("abort", stop, { once: true });
    try {
      return await conn.run(input, scoped, this.#runtime);
    } finally {
      scoped.signal.removeEventListener("abort", stop);
      this.#release(conn);
    }
  }

  /** Kills every container; waiting callers get an error. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const w of this.#waiters.splice(0)) w.reject(new Error("the runtime was closed"));
    await Promise.all([...this.#all].map((c) => c.kill("was stopped: the runtime closed")));
  }

  #acquire(scoped: ExecContext): Promise<FramedConnection> {
    if (this.#closed) return Promise.reject(new Error("the runtime was closed"));
    const idle = this.#idle.pop();
    if (idle !== undefined) return Promise.resolve(idle);
    return new Promise<FramedConnection>((resolve, reject) => {
      const waiter: Waiter = {
        resolve: (conn) => {
          scoped.signal.removeEventListener("abort", leave);
          resolve(conn);
        },
        reject: (err) => {
          scoped.signal.removeEventListener("abort", leave);
          reject(err);
        },
      };
      const leave = (): void => {
        const i = this.#waiters.indexOf(waiter);
        if (i !== -1) this.#waiters.splice(i, 1);
        reject(new Error("ended while waiting for a container"));
      };
      scoped.signal.addEventListener("abort", leave, { once: true });
      this.#waiters.push(waiter);
      this.#grow(Math.min(scoped.remainingMs(), AGENT_START_MS));
    });
  }

  /** Starts one more container if callers wait and the pool has room. */
  #grow(startMs = AGENT_START_MS): void {
    if (this.#closed || this.#waiters.length <= this.#starting) return;
    if (this.#all.size + this.#starting >= this.#max) return;
    this.#spawn(startMs).then(
      (conn) => this.#release(conn),
      (err: unknown) => {
        // The caller first in line learns why; the others keep waiting for a retry.
        this.#waiters.shift()?.reject(err instanceof Error ? err : new Error(messageOf(err)));
        this.#grow();
      },
    );
  }

  async #spawn(startMs = AGENT_START_MS): Promise<FramedConnection> {
    this.#starting++;
    try {
      const container = await createFramedContainer(this.#host, this.#spec);
      const conn = await FramedConnection.open(this.#host, this.#spec, container, startMs, (dead) =>
        this.#forget(dead),
      );
      this.#all.add(conn);
      if (this.#closed) void conn.kill("was stopped: the runtime closed");
      return conn;
    } finally {
      this.#starting--;
    }
  }

  /** Hands a container back: to the first waiter, or to the idle list. Dead ones are dropped. */
  #release(conn: FramedConnection): void {
    if (!conn.alive || this.#closed) {
      this.#forget(conn);
      if (this.#closed && conn.alive) void conn.kill("was stopped: the runtime closed");
      return;
    }
    const waiter = this.#waiters.shift();
    if (waiter !== undefined) waiter.resolve(conn);
    else if (!this.#idle.includes(conn)) this.#idle.push(conn);
  }

  #forget(conn: FramedConnection): void {
    this.#all.delete(conn);
    const i = this.#idle.indexOf(conn);
    if (i !== -1) this.#idle.splice(i, 1);
    void this.#host.discard(conn.container);
    this.#grow();
  }
}
