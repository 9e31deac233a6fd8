import { CancelWatchers } from "../cancel-watchers.js";
import { RunStatus, type RunRecord } from "../types.js";
import { Wakeups } from "../wakeups.js";

/**
 * The waiters of one SqliteRunStore: claims waiting for work on a queue (`work`, keyed
 * `q:<queue>`), tails waiting for a run's events (`events`, keyed by run id), waiters for a
 * run's status to change (`statuses`, keyed by run id: woken by record writes only) and workers
 * watching for a cancel of the runs they hold (`cancels`). This process's writes wake them at
 * once; other processes' commits are seen by watching SQLite's `data_version` every `pollMs`,
 * and only while someone waits.
 */
export class SqliteWaiters {
  readonly events = new Wakeups();
  readonly work = new Wakeups();
  readonly statuses = new Wakeups();
  readonly cancels = new CancelWatchers();
  readonly #pollMs: number;
  readonly #version: () => number;
  readonly #cancelRequested: (runId: string) => boolean;
  #poller: ReturnType<typeof setInterval> | null = null;
  #dataVersion: number;
  #closed = false;

  /**
   * @param version reads SQLite's `data_version` (changes when another connection commits)
   * @param cancelRequested whether a cancel of `runId` is recorded (a watched run's check)
   */
  constructor(pollMs: number, version: () => number, cancelRequested: (runId: string) => boolean) {
    this.#pollMs = pollMs;
    this.#version = version;
    this.#cancelRequested = cancelRequested;
    this.#dataVersion = version();
  }

  /** Calls `listener` once another connection records a cancel of `runId`. */
  watchCancel(runId: string, listener: () => void): () => void {
    const unwatch = this.cancels.watch(runId, listener);
    this.#startPolling();
    return () => {
      unwatch();
      this.#stopPollingIfIdle();
    };
  }

  /** `run`'s record changed: wake its tails and status waiters, and its queue's claims when it is pending. */
  wake(run: RunRecord): void {
    this.events.wake(run.id);
    this.statuses.wake(run.id);
    if (run.status === RunStatus.PENDING) this.work.wake(`q:${run.queue}`);
  }

  /** Waits on `wakeups` while watching for other processes' commits. */
  async waitFor(
    wakeups: Wakeups,
    key: string,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    this.#startPolling();
    try {
      await wakeups.wait(key, timeoutMs, signal);
    } finally {
      this.#stopPollingIfIdle();
    }
  }

  #startPolling(): void {
    if (this.#closed) return;
    this.#poller ??= setInterval(() => this.#poll(), this.#pollMs);
  }

  #stopPollingIfIdle(): void {
    const idle =
      this.events.size === 0 &&
      this.work.size === 0 &&
      this.statuses.size === 0 &&
      this.cancels.size === 0;
    if (idle && this.#poller !== null) {
      clearInterval(this.#poller);
      this.#poller = null;
    }
  }

  /** Stops watching and wakes everyone (the store is closing). */
  close(): void {
    this.#closed = true;
    if (this.#poller !== null) clearInterval(this.#poller);
    this.#poller = null;
    this.events.wakeAll();
    this.work.wakeAll();
    this.statuses.wakeAll();
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
    this.statuses.wakeAll();
    for (const runId of [...this.cancels.runIds()]) {
      let asked: boolean;
      try {
        asked = this.#cancelRequested(runId);
      } catch {
        continue; // the file is busy or closing: the next commit (or heartbeat) tells again
      }
      if (asked) this.cancels.notify(runId);
    }
  }
}
