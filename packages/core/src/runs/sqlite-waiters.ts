import { RunStatus, type RunRecord } from "./types.js";
import { Wakeups } from "./wakeups.js";

/**
 * The waiters of one SqliteRunStore: claims waiting for work on a queue (`work`, keyed
 * `q:<queue>`) and tails waiting for a run's events (`events`, keyed by run id). This process's
 * writes wake them at once; other processes' commits are seen by watching SQLite's
 * `data_version` every `pollMs`, and only while someone waits.
 */
export class SqliteWaiters {
  readonly events = new Wakeups();
  readonly work = new Wakeups();
  readonly #pollMs: number;
  readonly #version: () => number;
  #poller: ReturnType<typeof setInterval> | null = null;
  #dataVersion: number;
  #closed = false;

  constructor(pollMs: number, version: () => number) {
    this.#pollMs = pollMs;
    this.#version = version;
    this.#dataVersion = version();
  }

  /** `run` changed: wake its tails, and its queue's claims when it is pending. */
  wake(run: RunRecord): void {
    this.events.wake(run.id);
    if (run.status === RunStatus.PENDING) this.work.wake(`q:${run.queue}`);
  }

  /** Waits on `wakeups` while watching for other processes' commits. */
  async waitFor(
    wakeups: Wakeups,
    key: string,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    this.#poller ??= setInterval(() => this.#poll(), this.#pollMs);
    try {
      await wakeups.wait(key, timeoutMs, signal);
    } finally {
      if (this.events.size === 0 && this.work.size === 0 && this.#poller !== null) {
        clearInterval(this.#poller);
        this.#poller = null;
      }
    }
  }

  /** Stops watching and wakes everyone (the store is closing). */
  close(): void {
    this.#closed = true;
    if (this.#poller !== null) clearInterval(this.#poller);
    this.#poller = null;
    this.events.wakeAll();
    this.work.wakeAll();
  }

  /** Another connection committed: wake every waiter, each re-reads what it waits for. */
  #poll(): void {
    if (this.#closed) return;
    let version: number;
    try {
      version = this.#version();
    } catch {
      return;
    }
    if (version === this.#dataVersion) return;
    this.#dataVersion = version;
    this.events.wakeAll();
    this.work.wakeAll();
  }
}
