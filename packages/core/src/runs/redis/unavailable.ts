import { ErrorCode, NervaError, isNervaError } from "../../errors.js";

const unavailableCodes =
  /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|Connection is closed|MaxRetriesPerRequest|Stream isn't writeable/;

/** A Redis connection failure as NervaError UNAVAILABLE (retryable); any other error as it is. */
export function toUnavailable(err: unknown): unknown {
  if (isNervaError(err)) return err;
  const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  if (unavailableCodes.test(message)) {
    // UNAVAILABLE is a 503, whose message clients read: the client library's own text (which may
    // name the server's address) stays in `cause`, for the server's logs.
    return new NervaError(
      ErrorCode.UNAVAILABLE,
      "The run store is unavailable: Redis cannot be reached. Retry later.",
      { cause: err, details: { retryAfterSeconds: 1 } },
    );
  }
  return err;
}
