import type { Redis } from "ioredis";
import { Wakeups } from "../wakeups.js";
import type { RedisRecords } from "./records.js";
import { toUnavailable } from "./unavailable.js";

/**
 * The pub/sub side of a RedisRunStore, on a connection of its own: waiters on a run's events
 * (the commit script publishes `<prefix>:ev:<id>` when it appends some) and cancel watchers (a
 * cancel publishes the run id on `<prefix>:cancel`, so the worker holding the run hears it at
 * once, whichever process it is in).
 */
export class RedisTails {
  readonly #records: RedisRecords;
  readonly #closed: () => boolean;
  readonly #sub: Redis;
  readonly #events = new Wakeups();
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

  async waitForEvents(
    runId: string,
    afterSeq: number,
    options: { signal?: AbortSignal; timeoutSeconds?: number },
  ): Promise<void> {
    if (this.#closed() || options.signal?.aborted === true) return;
    const redis = this.#records.redis;
    const channel = this.#records.key("ev", runId);
    await this.#subscribe(channel);
    // Park the waiter before reading: a notification that lands while the read is in flight
    // (it comes on the other connection) must not be missed.
    const done = new AbortController();
    const signal =
      options.signal === undefined ? done.signal : AbortSignal.any([options.signal, done.signal]);
    const waiting = this.#events.wait(runId, (options.timeoutSeconds ?? Infinity) * 1000, signal);
    try {
      // Every record has seq: none means no run (gone, or never written), nothing to wait for.
      const seq = await redis.hget(this.#records.key("run", runId), "seq");
      if (seq === null || Number(seq) > afterSeq) done.abort();
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
    this.#events.wake(channel.slice(this.#records.key("ev").length + 1));
  }

  /** Wakes every waiter (the store is closing). */
  wakeAll(): void {
    this.#events.wakeAll();
  }

  close(): void {
    this.#sub.disconnect();
  }
}
