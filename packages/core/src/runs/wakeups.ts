/**
 * Wake-ups keyed by a string (a run id, a queue name): waiters park a callback, writers call
 * `wake(key)`. In-process only; each waiter also has its own timeout and abort signal, so a
 * missed wake-up costs at most one timeout, never a hang.
 */
export class Wakeups {
  readonly #waiters = new Map<string, Set<() => void>>();

  /** Resolves on `wake(key)`, `signal` abort or after `timeoutMs` (whichever comes first). */
  wait(key: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted === true || timeoutMs <= 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      let set = this.#waiters.get(key);
      if (set === undefined) this.#waiters.set(key, (set = new Set()));
      const waiters = set;
      const done = (): void => {
        waiters.delete(done);
        if (waiters.size === 0 && this.#waiters.get(key) === waiters) this.#waiters.delete(key);
        if (timer !== null) clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const timer = Number.isFinite(timeoutMs)
        ? setTimeout(done, Math.min(timeoutMs, 2_147_483_647))
        : null;
      signal?.addEventListener("abort", done, { once: true });
      waiters.add(done);
    });
  }

  /** Wakes every waiter of `key`. */
  wake(key: string): void {
    const set = this.#waiters.get(key);
    if (set === undefined) return;
    for (const done of [...set]) done();
  }

  /** Wakes everyone (closing). */
  wakeAll(): void {
    for (const key of [...this.#waiters.keys()]) this.wake(key);
  }

  /** Whether anyone waits on any key. */
  get size(): number {
    return this.#waiters.size;
  }
}

/**
 * Whether a run now in status `now` ends a wait to leave status `leave` (see
 * `RunStore.waitForStatusChange`): another status, and one of `until` when it is given.
 */
export const endsStatusWait = (
  now: string,
  leave: string,
  until: readonly string[] | undefined,
): boolean => now !== leave && (until === undefined || until.includes(now));
