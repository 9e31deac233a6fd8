interface Bucket {
  /** Admission times (ms), oldest first, from index `head` on. */
  times: number[];
  head: number;
}

/** The result of one {@link SlidingWindowLimiter.hit}. */
export type LimitResult =
  | { readonly allowed: true; readonly remaining: number }
  | { readonly allowed: false; readonly retryAfterSeconds: number; readonly retryAfterMs: number };

const SWEEP_EVERY = 1024;

/**
 * A sliding-window log: at most `limit` admissions per key in any `windowMs`. Refused attempts
 * are not recorded, so a client that keeps retrying is not locked out longer. Expired admissions
 * are skipped by moving a head index (amortised O(1) per check, whatever the limit); memory is
 * bounded by the admissions inside the window of each active key, and idle keys are swept.
 */
export class SlidingWindowLimiter {
  readonly #limit: number;
  readonly #windowMs: number;
  readonly #buckets = new Map<string, Bucket>();
  #checks = 0;

  constructor(limit: number, windowMs: number) {
    this.#limit = limit;
    this.#windowMs = windowMs;
  }

  /** Whether an attempt for `key` at `now` would be admitted; records nothing. */
  peek(key: string, now: number): LimitResult {
    if (++this.#checks % SWEEP_EVERY === 0) this.#sweep(now);
    const bucket = this.#buckets.get(key);
    if (bucket === undefined) return { allowed: true, remaining: this.#limit };
    this.#expire(bucket, now);
    const count = bucket.times.length - bucket.head;
    if (count >= this.#limit) {
      const waitMs = (bucket.times[bucket.head] as number) + this.#windowMs - now;
      return {
        allowed: false,
        retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)),
        retryAfterMs: waitMs,
      };
    }
    return { allowed: true, remaining: this.#limit - count };
  }

  /** Admits (and records) one attempt for `key` at `now`, or refuses it. */
  hit(key: string, now: number): LimitResult {
    const probe = this.peek(key, now);
    if (!probe.allowed) return probe;
    let bucket = this.#buckets.get(key);
    if (bucket === undefined) this.#buckets.set(key, (bucket = { times: [], head: 0 }));
    bucket.times.push(now);
    return { allowed: true, remaining: probe.remaining - 1 };
  }

  /** Number of keys currently tracked (for tests and metrics). */
  get size(): number {
    return this.#buckets.size;
  }

  #expire(bucket: Bucket, now: number): void {
    const horizon = now - this.#windowMs;
    const times = bucket.times;
    let head = bucket.head;
    while (head < times.length && (times[head] as number) <= horizon) head++;
    // Drop the expired prefix once it is at least half the array: amortised O(1).
    if (head > 0 && head * 2 >= times.length) {
      bucket.times = times.slice(head);
      head = 0;
    }
    bucket.head = head;
  }

  #sweep(now: number): void {
    const horizon = now - this.#windowMs;
    for (const [key, bucket] of this.#buckets) {
      const last = bucket.times[bucket.times.length - 1];
      if (last === undefined || last <= horizon) this.#buckets.delete(key);
    }
  }
}
