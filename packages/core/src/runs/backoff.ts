import type { RetryPolicy } from "./types.js";

/**
 * The delay before retry `n` (1 after the first failed attempt), in seconds:
 * `min(maxDelaySeconds, initialDelaySeconds × backoffFactor^(n−1)) × (1 − jitter × u)` with
 * `u` uniform in [0, 1).
 *
 * @example
 * retryDelaySeconds({ maxAttempts: 5, initialDelaySeconds: 1, backoffFactor: 2, maxDelaySeconds: 60, jitter: 0 }, 3); // 4
 */
export function retryDelaySeconds(
  policy: RetryPolicy,
  n: number,
  random: () => number = Math.random,
): number {
  const base = Math.min(
    policy.maxDelaySeconds,
    policy.initialDelaySeconds * policy.backoffFactor ** Math.max(0, n - 1),
  );
  return base * (1 - policy.jitter * random());
}
