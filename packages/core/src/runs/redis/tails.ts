import type { Redis } from "ioredis";
import type { RunStatus } from "../types.js";
import { Wakeups, endsStatusWait } from "../wakeups.js";
import type { RedisRecords } from "./records.js";
import { toUnavailable } from "./unavailable.js";

/**
 * The pub/sub side of a RedisRunStore, on a connection of its own: waiters on a run's events
 * (the commit script publishes `<prefix>:ev:<id>` when it appends some) and cancel watchers (a
 * cancel publishes the run id on `<prefix>:cancel`, so the worker holding the run hears it at
 * once, whichever process it is in). A message on a run's channel is `<last seq>:<status>`, so
 * a waiter for a status change sleeps through the events that leave the status as it is.
 */
export class RedisTails {
  readonly #records: RedisRecords;
  readonly #closed: () => boolean;
  readonly #sub: Redis;
  readonly #events = new Wakeups();
  /** Waiters for a status change, each under a key of its own. */
  readonly #statusChanges = new Wakeups();
  /** Per run, its status waiters by key. */
  readonly #statusWaiters = new Map<string, Map<string, StatusWaiter>>();
  #nextWaiter = 0;
  readonly #subscribed = new Map<string, number>();
  readonly #cancelWatchers = new Map<string, Set<() => void>>();

  constructor(records: RedisRecords, closed: () => boolean) {
    this.#records = records;
    this.#closed = closed;
    this.#sub = records.redis.duplicate();
    this.#sub.on("error", () => undefined);
    this.#sub.on("message", (channel: string, message: string) =>
      this.#onMessage(channel, message),
    );
    void this.#sub.subscribe(records.key("cancel")).catch(() => undefined);
  }

  waitForEvents(
    runId: string,
    afterSeq: number,
    options: { signal?: AbortSignal; timeoutSeconds?: number },
  ): Promise<void> {
    return this.#wait(runId, options, this.#events, runId, "seq", (seq) => Number(seq) > afterSeq);
  }

  async waitForStatusChange(
    runId: string,
    status: RunStatus,
    options: { signal?: AbortSignal; timeoutSeconds?: number; until?: readonly RunStatus[] },
  ): Promise<void> {
    const waiter: StatusWaiter = { leave: status, until: options.until };
    const key = `${runId} ${this.#nextWaiter++}`;
    let waiters = this.#statusWaiters.get(runId);
    if (waiters === undefined) this.#statusWaiters.set(runId, (waiters = new Map()));
    waiters.set(key, waiter);
    try {
      await this.#wait(runId, options, this.#statusChanges, key, "status", (now) =>
        endsStatusWait(now, waiter.leave, waiter.until),
      );
    } finally {
      waiters.delete(key);
      if (waiters.size === 0 && this.#statusWaiters.get(runId) === waiters) {
        this.#statusWaiters.delete(runId);
      }
    }
  }

  /**
   * Subscribes to the run's channel, parks on `key` of `wakeups`, then reads `field` of the run
   * once: a missing record (no field) or a value for which `ready` holds ends the wait at once.
   */
  async #wait(
    runId: string,
    options: { signal?: AbortSignal; timeoutSeconds?: number },
    wakeups: Wakeups,
    key: string,
    field: "seq" | "status",
    ready: (value: string) => boolean,
  ): Promise<void> {
    if (this.#closed() || options.signal?.aborted === true) return;
    const channel = this.#records.key("ev", runId);
    await this.#subscribe(channel);
    // Park the waiter before reading: a notification that lands while the read is in flight
    // (it comes on the other connection) must not be missed.
    const done = new AbortController();
    const signal =
      options.signal === undefined ? done.signal : AbortSignal.any([options.signal, done.signal]);
    const waiting = wakeups.wait(key, (options.timeoutSeconds ?? Infinity) * 1000, signal);
    try {
      // Every record has seq and status: none means no run (gone, or never written).
      const value = await this.#records.redis
        .hget(this.#records.key("run", runId), field)
        .catch((e: unknown) => {
          throw toUnavailable(e);
        });
      if (value === null || ready(value)) done.abort();
      await waiting;
    } finally {
      done.abort();
      await this.#unsubscribe(channel);
    }
  }

  watchCancel(runId: string, listener: () => void): () => void {
    let set = this.#cancelWatchers.get(runId);
    if (set === undefined) this.#cancelWatchers.set(runId, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.#cancelWatchers.delete(runId);
    };
  }

  /** Tells every process's cancel watchers of `runId` (best effort). */
  async publishCancel(runId: string): Promise<void> {
    await this.#records.redis.publish(this.#records.key("cancel"), runId).catch(() => undefined);
  }

  async #subscribe(channel: string): Promise<void> {
    const n = this.#subscribed.get(channel) ?? 0;
    this.#subscribed.set(channel, n + 1);
    if (n === 0)
      await this.#sub.subscribe(channel).catch((e: unknown) => {
        throw toUnavailable(e);
      });
  }

  async #unsubscribe(channel: string): Promise<void> {
    const n = (this.#subscribed.get(channel) ?? 1) - 1;
    if (n > 0) {
      this.#subscribed.set(channel, n);
      return;
    }
    this.#subscribed.delete(channel);
    if (!this.#closed()) await this.#sub.unsubscribe(channel).catch(() => undefined);
  }

  #onMessage(channel: string, message: string): void {
    if (channel === this.#records.key("cancel")) {
      for (const listener of [...(this.#cancelWatchers.get(message) ?? [])]) listener();
      return;
    }
    const runId = channel.slice(this.#records.key("ev").length + 1);
    this.#events.wake(runId);
    const waiters = this.#statusWaiters.get(runId);
    if (waiters === undefined) return;
    // "<seq>:<status>"; a message without a status (a prune, or a writer of an older version)
    // wakes every status waiter of the run.
    const colon = message.indexOf(":");
    const status = colon < 0 ? null : message.slice(colon + 1);
    for (const [key, waiter] of [...waiters]) {
      if (status === null || endsStatusWait(status, waiter.leave, waiter.until)) {
        this.#statusChanges.wake(key);
      }
    }
  }

  /** Wakes every waiter (the store is closing). */
  wakeAll(): void {
    this.#events.wakeAll();
    this.#statusChanges.wakeAll();
  }

  close(): void {
    this.#sub.disconnect();
  }
}

/** A waiter for a run's status to leave `leave`, for one in `until` (any, when not given). */
interface StatusWaiter {
  leave: string;
  until: readonly string[] | undefined;
}
