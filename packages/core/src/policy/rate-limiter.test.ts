import { describe, expect, it } from "vitest";
import { SlidingWindowLimiter } from "./rate-limiter.js";

describe("SlidingWindowLimiter", () => {
  it("admits at most `limit` per window and says when to retry", () => {
    const limiter = new SlidingWindowLimiter(3, 10_000);
    expect(limiter.hit("k", 0)).toEqual({ allowed: true, remaining: 2 });
    expect(limiter.hit("k", 1000).allowed).toBe(true);
    expect(limiter.hit("k", 2000)).toEqual({ allowed: true, remaining: 0 });
    expect(limiter.hit("k", 2500)).toEqual({
      allowed: false,
      retryAfterSeconds: 8,
      retryAfterMs: 7500,
    });
    expect(limiter.peek("other", 2500)).toEqual({ allowed: true, remaining: 3 });
    // The first admission leaves the window at 10 s: one slot frees up, refusals were not counted.
    expect(limiter.hit("k", 10_000)).toEqual({ allowed: true, remaining: 0 });
    expect(limiter.hit("k", 10_500).allowed).toBe(false);
    expect(limiter.peek("k", 12_001)).toEqual({ allowed: true, remaining: 2 });
  });

  it("keeps up with large limits and forgets idle keys", () => {
    const limiter = new SlidingWindowLimiter(1_000_000, 1000);
    for (let t = 0; t < 200_000; t++) expect(limiter.hit("busy", t / 10).allowed).toBe(true);
    // At t = 20 s only the last second of admissions (10,000) is still in the window.
    expect(limiter.peek("busy", 20_000)).toEqual({ allowed: true, remaining: 990_001 });
    for (let i = 0; i < 2048; i++) limiter.hit(`user-${i}`, 30_000);
    for (let i = 0; i < 1024; i++) limiter.peek("x", 40_000);
    expect(limiter.size).toBe(0);
  });
});
