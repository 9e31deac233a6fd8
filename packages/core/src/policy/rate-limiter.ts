interface Bucket {
  /** Admission times (ms), oldest first. */
  readonly times: number[];
}

/** The result of one {@link SlidingWindowLimiter.hit}. */
export type LimitResult =
  | { readonly allowed: true; readonly remaining: number }
  | { readonly allowed: false; readonly retryAfterSeconds: number };

const SWEEP_EVERY = 1024;

/**
 * A sliding-window log: at most `limit` admissions per key in any `windowMs`. Refused attempts
 * are not recorded, so a client that keeps retrying is not locked out longer. Memory is bounded by
 * `limit` timestamps per active key; idle keys are swept.
 */
export class SlidingWindowLimiter {
  readonly #limit: number;
  readonly #windowMs: number;
  readonly #buckets = new Map<string, Bucket>();
  #hits = 0;

  constructor(limit: number, windowMs: number) {
    this.#limit = limit;
    this.#windowMs = windowMs;
  }

  /** Whether an attempt for `key` at `now` would be admitted; records nothing. */
  peek(key: string, now: number): LimitResult {
    if (++this.#hits % SWEEP_EVERY === 0) this.#sweep(now);
    const times = this.#buckets.get(key)?.times;
    if (times === undefined) return { allowed: true, remaining: this.#limit };
    const horizon = now - this.#windowMs;
    let expired = 0;
    while (expired < times.length && (times[expired] as number) <= horizon) expired++;
    if (expired > 0) times.splice(0, expired);
    if (times.length >= this.#limit) {
      const waitMs = (times[0] as number) + this.#windowMs - now;
      return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) };
    }
    return { allowed: true, remaining: this.#limit - times.length };
  }

  /** Admits (and records) one attempt for `key` at `now`, or refuses it. */
  hit(key: string, now: number): LimitResult {
    const probe = this.peek(key, now);
    if (!probe.allowed) return probe;
    let bucket = this.#buckets.get(key);
    if (bucket === undefined) this.#buckets.set(key, (bucket = { times: [] }));
    bucket.times.push(now);
    return { allowed: true, remaining: probe.remaining - 1 };
  }

  /** Number of keys currently tracked (for tests and metrics). */
  get size(): number {
    return this.#buckets.size;
  }

  #sweep(now: number): void {
    const horizon = now - this.#windowMs;
    for (const [key, bucket] of this.#buckets) {
      const last = bucket.times[bucket.times.length - 1];
      if (last === undefined || last <= horizon) this.#buckets.delete(key);
    }
  }
}
