import { spawn, type ChildProcess } from "node:child_process";
import type { Duplex, Readable, Writable } from "node:stream";
import type { InitReport } from "./init.js";
import {
  CONTROL_FD,
  FIRST_CALL_FD,
  FORK_SERVER_CALLS,
  parseServerReports,
} from "./fork-server-script.js";
import { childPids, type Launch } from "./launcher.js";
import { TailBuffer, killGroup } from "./output.js";
import { setChildRef } from "./spare.js";

/** How a call on a fork server ended: the server's report, or the server's end without one. */
export type ServerCallEnd =
  | { readonly kind: "report"; readonly report: InitReport }
  | { readonly kind: "server-gone"; readonly why: string };

/** One call's stdio on a fork server, and its end. */
export interface ServerCall {
  /** Host pid of the fork server's launcher (its process group holds the server and the call). */
  readonly pid: number | undefined;
  readonly stdin: Writable;
  readonly stdout: Readable;
  readonly stderr: Readable;
  readonly channel: Duplex;
  /** Resolves once the call's processes are all gone: reported (after the server reaped them), or the server died. */
  readonly ended: Promise<ServerCallEnd>;
}

/** Streams of one call, as Node created them for the server's stdio. */
type CallStdio = [Writable, Readable, Readable, Duplex];

/**
 * One fork server process (see fork-server-script.ts): a launcher whose namespace's init runs
 * up to {@link FORK_SERVER_CALLS} executable calls in turn. A server that is killed (a deadline,
 * a cancel, a failure) is never used again.
 */
export class ForkServer {
  readonly #child: ChildProcess;
  readonly #control: Duplex;
  readonly #sets: CallStdio[] = [];
  readonly #stderr = new TailBuffer(512);
  #next = 0;
  #reportText = "";
  #current: { call: number; resolve: (end: ServerCallEnd) => void } | null = null;
  #dead = false;
  #killed = false;
  #reported = 0;
  /** Resolves when the launcher process has exited. */
  readonly exited: Promise<void>;

  constructor(launch: Launch, cwd: string) {
    const stdio: ("ignore" | "pipe")[] = ["ignore", "ignore", "pipe", "pipe"];
    for (let i = 0; i < FORK_SERVER_CALLS * 4; i++) stdio.push("pipe");
    this.#child = spawn(launch.command, launch.args, {
      cwd,
      env: launch.env,
      detached: true,
      stdio,
    });
    const child = this.#child;
    this.exited = new Promise<void>((resolve) => {
      child.once("exit", () => resolve()).once("error", () => resolve());
    });
    child.on("error", () => this.#gone("could not be started"));
    child.once("exit", (code, signal) => this.#gone(`exited (${signal ?? `code ${code}`})`));
    const streams = child.stdio as unknown as (Duplex | null)[];
    for (const s of streams) s?.on("error", () => undefined);
    (streams[2] as Readable).on("data", (bytes: Buffer) => this.#stderr.push(bytes));
    this.#control = streams[CONTROL_FD] as Duplex;
    this.#control.setEncoding("latin1");
    this.#control.on("data", (text: string) => this.#onReports(text));
    this.#control.once("close", () => this.#gone("closed its control socket"));
    for (let call = 0; call < FORK_SERVER_CALLS; call++) {
      const base = FIRST_CALL_FD + 4 * call;
      this.#sets.push(streams.slice(base, base + 4) as CallStdio);
    }
    setChildRef(child, false);
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  /** Whether the server ended by itself before it reported a single call (it could not start). */
  get failedToStart(): boolean {
    return this.#dead && !this.#killed && this.#reported === 0;
  }

  /** Whether the server can take a call now: alive, idle, with a call's stdio left. */
  get available(): boolean {
    return !this.#dead && this.#current === null && this.#next < FORK_SERVER_CALLS;
  }

  /**
   * Runs a program (a command as encoded by `encodeHandshake`) on the next call's stdio. The
   * server keeps the host's event loop alive until the call has ended.
   */
  run(command: Buffer): ServerCall {
    if (!this.available) throw new Error("fork server not available");
    const call = this.#next++;
    const [stdin, stdout, stderr, channel] = this.#sets[call] as CallStdio;
    let resolve!: (end: ServerCallEnd) => void;
    const ended = new Promise<ServerCallEnd>((r) => (resolve = r));
    this.#current = { call, resolve };
    this.#refServer(true);
    for (const s of [stdin, stdout, stderr, channel] as { ref?: () => void }[]) s.ref?.();
    this.#control.write(command);
    return { pid: this.#child.pid, stdin, stdout, stderr, channel, ended };
  }

  /**
   * SIGKILL: kills the server's init, so the kernel kills everything in its namespace; the
   * launcher exits once all of it is gone (so {@link exited} means that). Another signal goes to
   * the process group (the program gets it; the launcher and the init ignore it).
   */
  kill(signal: NodeJS.Signals = "SIGKILL"): void {
    const child = this.#child;
    // Once reaped, its pid may belong to someone else.
    if (child.exitCode !== null || child.signalCode !== null) return;
    const pid = child.pid;
    if (signal !== "SIGKILL") {
      killGroup(pid, signal);
      return;
    }
    this.#dead = true;
    this.#killed = true;
    const init = pid === undefined ? undefined : childPids(pid)[0];
    try {
      if (init === undefined) throw new Error("no init yet");
      process.kill(init, "SIGKILL");
    } catch {
      killGroup(pid);
    }
  }

  /** Kills the server; resolves once its launcher has exited. */
  async close(): Promise<void> {
    this.kill();
    setChildRef(this.#child, true);
    await this.exited;
  }

  /** Whether the server (its process and control socket) keeps the host's event loop alive. */
  #refServer(ref: boolean): void {
    const child = this.#child;
    const control = this.#control as { ref?: () => void; unref?: () => void };
    if (ref) {
      child.ref();
      control.ref?.();
    } else {
      child.unref();
      control.unref?.();
    }
  }

  #onReports(text: string): void {
    const { reports, rest } = parseServerReports(this.#reportText + text);
    this.#reportText = rest.length > 256 ? "" : rest;
    for (const { call, report } of reports) {
      const current = this.#current;
      if (current === null || current.call !== call) continue;
      this.#current = null;
      this.#reported++;
      this.#refServer(false);
      current.resolve({ kind: "report", report });
    }
  }

  #gone(why: string): void {
    this.#dead = true;
    // The stdio of calls that never ran (a stdin socket would otherwise stay open).
    for (const set of this.#sets.splice(this.#next)) for (const s of set) s.destroy();
    const current = this.#current;
    if (current === null) return;
    this.#current = null;
    const said = this.#stderr.text();
    current.resolve({ kind: "server-gone", why: said === "" ? why : `${why}: ${said}` });
  }
}

/**
 * The fork servers of one runtime. A call takes an idle one (one call at a time each, so calls
 * running at the same time never share a namespace); when none is idle, the call starts the way
 * a server would (a per-call init started ahead of need, which costs no more), and a server is
 * started for the calls that follow. Idle servers do not keep the host alive; their init exits
 * when the host goes away.
 */
export class ForkServerPool {
  readonly #launch: () => Launch;
  readonly #cwd: string;
  readonly #maxIdle: number;
  readonly #idle: ForkServer[] = [];
  readonly #all = new Set<ForkServer>();
  #spareQueued = false;
  #closed = false;
  /** Set when a server could not start: later calls use per-call inits (the probe passed, yet). */
  #broken = false;

  constructor(launch: () => Launch, cwd: string, maxIdle = 4) {
    this.#launch = launch;
    this.#cwd = cwd;
    this.#maxIdle = maxIdle;
  }

  #start(): ForkServer {
    const server = new ForkServer(this.#launch(), this.#cwd);
    this.#all.add(server);
    void server.exited.then(() => {
      if (server.failedToStart) this.#broken = true;
      this.#all.delete(server);
      const at = this.#idle.indexOf(server);
      if (at !== -1) this.#idle.splice(at, 1);
    });
    return server;
  }

  /**
   * An idle server for the next call (give it back with {@link release}), or null when none is;
   * when this leaves none idle, another is started in a later turn of the event loop.
   */
  take(): ForkServer | null {
    if (this.#broken) return null;
    let server: ForkServer | undefined;
    while ((server = this.#idle.pop()) !== undefined && !server.available);
    if (this.#idle.length === 0) this.#queueSpare();
    return server ?? null;
  }

  /** After a call: an idle server that has calls left waits for the next; a killed one is dropped. */
  release(server: ForkServer): void {
    if (!server.available) return;
    if (this.#closed || this.#idle.length >= this.#maxIdle) {
      void server.close();
      return;
    }
    this.#idle.push(server);
  }

  // In a later turn of the event loop: Node's spawn is synchronous, so not on the call's path.
  #queueSpare(): void {
    if (this.#spareQueued || this.#closed || this.#broken) return;
    this.#spareQueued = true;
    setImmediate(() => {
      this.#spareQueued = false;
      if (this.#closed || this.#broken || this.#idle.some((s) => s.available)) return;
      this.#idle.unshift(this.#start());
    }).unref();
  }

  /** Kills every server (idle or busy); resolves once all have exited. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#idle.length = 0;
    await Promise.all([...this.#all].map((s) => s.close()));
  }
}
