import { spawn, type ChildProcess } from "node:child_process";
import type { Writable } from "node:stream";
import { STATUS_FD } from "./init.js";
import { childPids, type Launcher } from "./launcher.js";
import { workerEntry } from "./worker-entry-file.js";

/** Settings shared by every worker of a pool. */
export interface WorkerSettings {
  readonly nodePath: string;
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  readonly maxOutputBytes: number;
  readonly stderrTailBytes: number;
  /** Values masked in every quote of a worker's stderr (see `secretValues`). */
  readonly secrets: readonly string[];
  readonly memoryLimitMb: number | undefined;
  readonly cancelGraceMs: number;
  /** How the worker is started (confinement). */
  readonly launcher: Launcher;
  /** Milliseconds a new worker may take to send `ready`. */
  readonly startupTimeoutMs: number;
}

/**
 * Host pids of the process running the worker code and of its namespace's init (null without
 * one).
 */
export interface WorkerTree {
  readonly worker: number;
  readonly init: number | null;
}

/**
 * Starts a worker process through the settings' launcher (confinement): its own process group
 * (detached), the frame channel on fd 3, and the init's status fd when the launcher has a
 * handshake to send.
 */
export function spawnWorker(settings: WorkerSettings): ChildProcess {
  const { file, execArgv } = workerEntry();
  const args = [...execArgv];
  if (settings.memoryLimitMb !== undefined) {
    args.push(`--max-old-space-size=${settings.memoryLimitMb}`);
  }
  args.push(file);
  const run = settings.launcher.launch(settings.nodePath, args, settings.env, 0);
  const child = spawn(run.command, run.args, {
    cwd: settings.cwd,
    env: run.env,
    detached: true,
    stdio:
      run.handshake === null
        ? ["ignore", "pipe", "pipe", "pipe"]
        : ["ignore", "pipe", "pipe", "pipe", "pipe"],
  });
  (child.stdio[STATUS_FD] as Writable | undefined)?.write(run.handshake);
  return child;
}

/** The process tree of a ready worker `pid` (null if /proc cannot tell). */
export function findWorkerTree(pid: number | undefined, hasInit: boolean): WorkerTree | null {
  if (pid === undefined) return null;
  if (!hasInit) return { worker: pid, init: null };
  // launcher (pid) → init (PID 1 of the namespace) → the worker code (PID 2).
  const init = childPids(pid)[0];
  const worker = init === undefined ? undefined : childPids(init)[0];
  return init === undefined || worker === undefined ? null : { worker, init };
}

/**
 * Whether anything runs under the worker besides itself: its children, or orphans its
 * namespace's init adopted. Unknown (no /proc) counts as nothing.
 */
export function hasLeftProcesses(tree: WorkerTree | null): boolean {
  if (tree === null) return false;
  if (childPids(tree.worker).length > 0) return true;
  return tree.init !== null && childPids(tree.init).some((p) => p !== tree.worker);
}
