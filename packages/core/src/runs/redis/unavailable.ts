import { ErrorCode, NervaError, isNervaError } from "../../errors.js";

const unavailableCodes =
  /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|Connection is closed|MaxRetriesPerRequest|Stream isn't writeable/;

/** A Redis connection failure as NervaError UNAVAILABLE (retryable); any other error as it is. */
export function toUnavailable(err: unknown): unknown {
  if (isNervaError(err)) return err;
  const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  if (unavailableCodes.test(message)) {
    return new NervaError(
      ErrorCode.UNAVAILABLE,
      `Redis is unreachable (${message}). The run store retries; check the server and the connection options.`,
      { cause: err, details: { retryAfterSeconds: 1 } },
    );
  }
  return err;
}
