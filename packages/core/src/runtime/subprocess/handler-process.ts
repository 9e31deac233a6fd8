import { spawn, type ChildProcess } from "node:child_process";
import type { Duplex, Readable, Writable } from "node:stream";
import type { ForkServer, ForkServerPool } from "./fork-server.js";
import { STATUS_FD, encodeHandshake, parseInitReport, type InitReport } from "./init.js";
import type { Launcher } from "./launcher.js";
import { killGroup } from "./output.js";
import type { SpareLauncher } from "./spare.js";

/** How an executable's program ended, as far as the runtime can tell. */
export type ProcessEnd =
  | { readonly kind: "exit"; readonly code: number | null; readonly signal: NodeJS.Signals | null }
  /** The program could not be executed (reported by a namespace's init: an errno name). */
  | { readonly kind: "exec-error"; readonly code: string }
  /** Node could not spawn the process (`ENOENT`, `EACCES`...). */
  | { readonly kind: "spawn-error"; readonly error: NodeJS.ErrnoException }
  /** The fork server running the call ended without reporting it. */
  | { readonly kind: "lost"; readonly why: string };

/** The process of one executable call, however it was started. */
export interface HandlerProcess {
  /** Host pid of the process the runtime started (its process group holds the call). */
  readonly pid: number | undefined;
  readonly stdin: Writable;
  readonly stdout: Readable;
  readonly stderr: Readable;
  readonly channel: Duplex;
  /**
   * Whether a launcher (a shell applying a memory limit, setpriv) exec'd the program, so that an
   * exit code 126 or 127 may be its complaint about the file rather than the program's own.
   */
  readonly launched: boolean;
  /** How the program ended, once known (its stdio may still be closing). */
  readonly ended: Promise<ProcessEnd>;
  /** Resolves once every process of the call has exited. */
  readonly exited: Promise<void>;
  /** Signals every process of the call: its process group, or its whole namespace. */
  kill(signal?: NodeJS.Signals): void;
  /** Called once the call has settled: frees what it held (a fork server goes back to its pool). */
  release(): void;
}

/** Where a call's process comes from. */
export interface ProcessSource {
  readonly launcher: Launcher;
  readonly cwd: string;
  /** Confined launchers started ahead of need (per-call init), or null without an init. */
  readonly spares: SpareLauncher | null;
  /** Fork servers (namespace modes where the machine allows), or null. */
  readonly servers: ForkServerPool | null;
}

function reportEnd(report: InitReport): ProcessEnd {
  switch (report.kind) {
    case "exit":
      return { kind: "exit", code: report.code, signal: null };
    case "signal":
      return { kind: "exit", code: null, signal: report.signal };
    default:
      return { kind: "exec-error", code: report.code };
  }
}

function exitedOf(child: ChildProcess): Promise<void> {
  return new Promise<void>((done) => {
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) done();
    else child.once("exit", () => done()).once("error", () => done());
  });
}

/**
 * A child process the runtime started itself (directly, under a launcher, or under a per-call
 * init whose report on fd 4 says how the program ended).
 */
function fromChild(child: ChildProcess, launched: boolean, handshake: Buffer | null) {
  const pid = child.pid;
  let exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  const ended = new Promise<ProcessEnd>((resolve) => {
    child.on("error", (err: NodeJS.ErrnoException) => {
      // spawn failures (ENOENT, EACCES) arrive here, before any exit.
      if (exit === null && err.syscall?.startsWith("spawn") === true) {
        resolve({ kind: "spawn-error", error: err });
      }
    });
    child.on("exit", (code, signal) => {
      exit = { code, signal };
      // Nothing the program started may outlive it.
      killGroup(pid);
    });
    child.on("close", (code: number | null, signal: NodeJS.Signals | null) => {
      resolve({ kind: "exit", ...(exit ?? { code, signal }) });
    });
    if (handshake !== null) {
      const status = child.stdio[STATUS_FD] as Readable & Writable;
      status.on("error", () => undefined);
      status.write(handshake);
      status.setEncoding("latin1");
      let text = "";
      status.on("data", (chunk: string) => {
        if (text.length < 64) text += chunk;
        const report = parseInitReport(text);
        if (report !== null) resolve(reportEnd(report));
      });
    }
  });
  const [stdin, stdout, stderr, channel] = child.stdio as unknown as [
    Writable,
    Readable,
    Readable,
    Duplex,
  ];
  return {
    pid,
    stdin,
    stdout,
    stderr,
    channel,
    launched,
    ended,
    exited: exitedOf(child),
    kill: (signal: NodeJS.Signals = "SIGKILL") => killGroup(pid, signal),
    release: () => undefined,
  } satisfies HandlerProcess;
}

/** A call on a fork server: the program is forked by the server, inside its namespace. */
function onForkServer(
  servers: ForkServerPool,
  server: ForkServer,
  command: Buffer,
): HandlerProcess {
  const call = server.run(command);
  const ended = call.ended.then((end): ProcessEnd =>
    end.kind === "report" ? reportEnd(end.report) : { kind: "lost", why: end.why },
  );
  let released = false;
  return {
    pid: call.pid,
    stdin: call.stdin,
    stdout: call.stdout,
    stderr: call.stderr,
    channel: call.channel,
    launched: false,
    ended,
    // Reported only once the server has reaped every process of the call; else the server's
    // launcher exits once its namespace is gone.
    exited: call.ended.then((end) => (end.kind === "report" ? undefined : server.exited)),
    kill: (signal: NodeJS.Signals = "SIGKILL") => server.kill(signal),
    release: () => {
      if (released) return;
      released = true;
      // The server holds the other ends until it exits: these would stay open.
      call.stdin.destroy();
      call.channel.destroy();
      servers.release(server);
    },
  };
}

/**
 * Starts `file` with `env` for one call: on an idle fork server, else in a per-call init started
 * ahead of need, else spawned now (in its own process group, so a kill takes its children too).
 */
export function startHandler(
  source: ProcessSource,
  file: string,
  env: Record<string, string>,
  limitKb: number,
): HandlerProcess {
  const server = source.servers?.take() ?? null;
  if (server !== null) {
    return onForkServer(source.servers as ForkServerPool, server, encodeHandshake(file, [], env));
  }
  const run = source.launcher.launch(file, [], env, limitKb);
  if (run.handshake !== null && source.spares !== null) {
    return fromChild(source.spares.take(), false, run.handshake);
  }
  const child = spawn(run.command, run.args, {
    cwd: source.cwd,
    env: run.env,
    detached: true,
    stdio:
      run.handshake === null
        ? ["pipe", "pipe", "pipe", "pipe"]
        : ["pipe", "pipe", "pipe", "pipe", "pipe"],
  });
  return fromChild(child, run.handshake === null && run.command !== file, run.handshake);
}
