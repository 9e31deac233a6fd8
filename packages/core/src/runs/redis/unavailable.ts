import { redisUnavailable } from "../../internal/redis-connection.js";

/** A Redis connection failure as NervaError UNAVAILABLE (retryable); any other error as it is. */
export function toUnavailable(err: unknown): unknown {
  return redisUnavailable(err, "run store");
}
