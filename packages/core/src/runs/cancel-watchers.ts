import type { RunStore } from "./store.js";

/**
 * Listeners waiting for a cancel of a run, keyed by run id: what a store's `watchCancel` keeps
 * (SqliteRunStore, RedisRunStore), and what {@link watchLocalCancel} keeps per store object.
 */
export class CancelWatchers {
  readonly #byRun = new Map<string, Set<() => void>>();

  watch(runId: string, listener: () => void): () => void {
    let set = this.#byRun.get(runId);
    if (set === undefined) this.#byRun.set(runId, (set = new Set()));
    const listeners = set;
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
      if (listeners.size === 0 && this.#byRun.get(runId) === listeners) this.#byRun.delete(runId);
    };
  }

  /** Calls every listener of `runId`; one that throws does not stop the others. */
  notify(runId: string): void {
    const set = this.#byRun.get(runId);
    if (set === undefined) return;
    for (const listener of [...set]) {
      try {
        listener();
      } catch {
        // A listener is the Runner's own abort; it has nobody to report to here.
      }
    }
  }

  /** The run ids someone watches. */
  runIds(): IterableIterator<string> {
    return this.#byRun.keys();
  }

  get size(): number {
    return this.#byRun.size;
  }
}

// Runs executing in this process, per store object: a cancel asked through any RunQueue on the
// same store object reaches them at once, whatever the store (a user's own included), without
// waiting for a heartbeat or for the store to notify. Cancels from other processes (or other store
// objects on the same database) come through the store's `watchCancel`, or at the next heartbeat.
const local = new WeakMap<RunStore, CancelWatchers>();

/** Listens for cancels of `runId` asked in this process through `store`. */
export function watchLocalCancel(store: RunStore, runId: string, listener: () => void): () => void {
  let watchers = local.get(store);
  if (watchers === undefined) local.set(store, (watchers = new CancelWatchers()));
  return watchers.watch(runId, listener);
}

/** A cancel of `runId` was recorded through `store`: tell this process's workers now. */
export function notifyLocalCancel(store: RunStore, runId: string): void {
  local.get(store)?.notify(runId);
}
