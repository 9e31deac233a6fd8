import { spawn, type ChildProcess } from "node:child_process";
import type { Launcher } from "./launcher.js";
import { killGroup } from "./output.js";

/** The stdio of a process started under a namespace's init: 0-3 as usual, 4 the init's socket. */
export const INIT_STDIO = ["pipe", "pipe", "pipe", "pipe", "pipe"] as const;

/** Sets whether a child and its stdio streams keep the host's event loop alive. */
export function setChildRef(child: ChildProcess, ref: boolean): void {
  const streams = child.stdio as unknown as ({ ref?: () => void; unref?: () => void } | null)[];
  if (ref) child.ref();
  else child.unref();
  for (const s of streams) {
    if (ref) s?.ref?.();
    else s?.unref?.();
  }
}

/**
 * One confined launcher (the namespaces and their init) started ahead of need for executable
 * handlers: creating the namespaces and starting the init takes a few milliseconds, which a call
 * that takes a spare does not wait for. Under an init the spawn does not depend on the program
 * (the init is told which one on its socket), so any call can take the spare. A spare does not
 * keep the host alive, and exits by itself if the host goes away before using it.
 */
export class SpareLauncher {
  readonly #launcher: Launcher;
  readonly #cwd: string;
  readonly #limitKb: number;
  #spare: ChildProcess | null = null;
  #closed = false;

  constructor(launcher: Launcher, cwd: string, limitKb: number) {
    this.#launcher = launcher;
    this.#cwd = cwd;
    this.#limitKb = limitKb;
  }

  #start(): ChildProcess {
    const run = this.#launcher.launch("", [], {}, this.#limitKb);
    return spawn(run.command, run.args, {
      cwd: this.#cwd,
      env: run.env,
      detached: true,
      stdio: [...INIT_STDIO],
    });
  }

  /** A launcher for the next call: the spare if it is alive, else a new one; a spare follows. */
  take(): ChildProcess {
    const spare = this.#spare;
    this.#spare = null;
    let child: ChildProcess;
    if (
      spare !== null &&
      spare.pid !== undefined &&
      spare.exitCode === null &&
      spare.signalCode === null
    ) {
      setChildRef(spare, true);
      child = spare;
    } else {
      child = this.#start();
    }
    // In a later turn of the event loop: Node's spawn is synchronous, and this call is running.
    setImmediate(() => this.#refill()).unref();
    return child;
  }

  #refill(): void {
    if (this.#closed || this.#spare !== null) return;
    const spare = this.#start();
    // Until taken, nobody else listens: errors (a spawn failure) must not go unhandled.
    spare.on("error", () => undefined);
    for (const s of spare.stdio) s?.on("error", () => undefined);
    spare.once("exit", () => {
      if (this.#spare === spare) this.#spare = null;
    });
    setChildRef(spare, false);
    this.#spare = spare;
  }

  /** Kills the spare; resolves once it has exited. */
  async close(): Promise<void> {
    this.#closed = true;
    const spare = this.#spare;
    this.#spare = null;
    if (spare === null || spare.pid === undefined || spare.exitCode !== null) return;
    setChildRef(spare, true);
    const exited = new Promise<void>((resolve) => spare.once("exit", () => resolve()));
    killGroup(spare.pid);
    await exited;
  }
}
