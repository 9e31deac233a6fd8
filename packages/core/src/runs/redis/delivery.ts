import type { Redis } from "ioredis";
import type { ClaimRequest } from "../store.js";
import { takeAnswer, type Taken } from "./claim.js";
import type { RedisRecords } from "./records.js";

/** The longest a claim sleeps before it looks at the queue again, marker or not. */
const MAX_SLEEP_MS = 5_000;

/**
 * How a RedisRunStore hands out its runs. The queue is the store's own indexes (scripts.ts): a
 * claim is one script that takes the most urgent due run and leases it. A claim that finds nothing
 * sleeps until the queue's marker is set (every write of a pending run sets it; BZPOPMIN on a
 * connection of its own, one per queue and process, wakes one sleeping claim at a time), until
 * the earliest due time or lease expiry the script reported, or `MAX_SLEEP_MS`. The record and
 * its queue entry are written by the same script, so no run can be lost between them.
 */
export class RedisDelivery {
  readonly #records: RedisRecords;
  readonly #closed: () => boolean;
  /** The blocking connection of each queue this process claims from. */
  readonly #blocking = new Map<string, Redis>();
  /** Claims asleep on each queue, oldest first. */
  readonly #sleeping = new Map<string, (() => void)[]>();
  readonly #popping = new Set<string>();

  constructor(records: RedisRecords, closed: () => boolean) {
    this.#records = records;
    this.#closed = closed;
  }

  /**
   * The most urgent claimable run of `request.queue`, claimed for `request.workerId`; waits up to
   * `request.waitSeconds` for one; `null` when none came, `request.signal` aborted or the store
   * closed.
   */
  async claim(request: ClaimRequest): Promise<Taken | null> {
    const leaseMs = Math.round(request.leaseSeconds * 1000);
    const deadline = Date.now() + request.waitSeconds * 1000;
    while (!this.#closed() && request.signal?.aborted !== true) {
      const answer = await this.#records.claimNext(
        request.queue,
        request.workerId,
        leaseMs,
        Date.now(),
      );
      if (answer.kind !== "none") {
        // A run claimed, or a candidate decided: none claimed means look again at once.
        const taken = await takeAnswer(this.#records, answer, request, leaseMs);
        if (taken !== null) return taken;
        continue;
      }
      const now = Date.now();
      if (now >= deadline) return null;
      const untilDue = answer.next === null ? Infinity : answer.next - now;
      await this.#sleep(
        request.queue,
        Math.max(1, Math.min(deadline - now, untilDue, MAX_SLEEP_MS)),
        request.signal,
      );
    }
    return null;
  }

  /** Sleeps up to `ms`, or until the queue's marker wakes this claim or `signal` aborts. */
  #sleep(queue: string, ms: number, signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve) => {
      let sleeping = this.#sleeping.get(queue);
      if (sleeping === undefined) this.#sleeping.set(queue, (sleeping = []));
      const list = sleeping;
      const done = (): void => {
        const at = list.indexOf(done);
        if (at >= 0) list.splice(at, 1);
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener("abort", done, { once: true });
      list.push(done);
      this.#pop(queue);
    });
  }

  /**
   * Waits on the queue's marker while claims sleep on it; a marker wakes the oldest sleeper, or
   * goes back when none is left (it belongs to another process's claims then).
   */
  #pop(queue: string): void {
    if (this.#popping.has(queue) || this.#closed()) return;
    this.#popping.add(queue);
    const marker = this.#records.key("mark", queue);
    this.#connection(queue)
      .bzpopmin(marker, MAX_SLEEP_MS / 1000)
      .then(
        (popped) => {
          this.#popping.delete(queue);
          const sleeping = this.#sleeping.get(queue) ?? [];
          if (popped !== null && popped.length > 0) {
            const oldest = sleeping[0];
            if (oldest !== undefined) oldest();
            else void this.#records.redis.zadd(marker, 0, "0").catch(() => undefined);
          }
          if (sleeping.length > 0) this.#pop(queue);
        },
        // Redis unreachable or the store closing: the sleepers' own timers end their sleep, and
        // the next sleeper starts a new wait.
        () => this.#popping.delete(queue),
      );
  }

  #connection(queue: string): Redis {
    let connection = this.#blocking.get(queue);
    if (connection === undefined) {
      connection = this.#records.redis.duplicate();
      connection.on("error", () => undefined);
      this.#blocking.set(queue, connection);
    }
    return connection;
  }

  /** Wakes every sleeping claim and closes the blocking connections. */
  close(): void {
    for (const sleeping of this.#sleeping.values()) for (const done of [...sleeping]) done();
    for (const connection of this.#blocking.values()) connection.disconnect();
    this.#blocking.clear();
  }
}
