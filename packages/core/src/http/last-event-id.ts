import type { IncomingHttpHeaders } from "node:http";
import { ErrorCode, NervaError } from "../errors.js";

/** Longer than any safe integer: refused before it is read as a number. */
const MAX_DIGITS = 16;

/**
 * The seq to resume a run's event stream after: the request's `Last-Event-ID` header (what an
 * `EventSource` sends when it reconnects: the `id` of the last event it received), 0 without one.
 * A value that is not a non-negative whole number is refused with NervaError `INVALID_INPUT` (an
 * HTTP 400), never read as 0: replaying from the start would send the client every event again.
 * Takes any request with Node's `headers` (Express, Fastify, NestJS, `node:http`).
 *
 * @example
 * const afterSeq = lastEventSeq(req); // 0, 17 …; throws INVALID_INPUT on "abc" or "-3"
 * await writeSSE(res, queue.events(id, { afterSeq }), null, {
 *   message: (e) => ({ id: e.seq, event: e.type, data: clientRunEvent(e) }),
 * });
 */
export function lastEventSeq(request: { readonly headers: IncomingHttpHeaders }): number {
  const raw: unknown = request.headers["last-event-id"];
  if (raw === undefined) return 0;
  const text = typeof raw === "string" ? raw.trim() : null;
  // An empty header names no event: the stream starts from the first.
  if (text === "") return 0;
  const seq = text !== null && text.length <= MAX_DIGITS && /^\d+$/.test(text) ? Number(text) : -1;
  if (!Number.isSafeInteger(seq) || seq < 0) {
    const shown = JSON.stringify(String(raw)).slice(0, 40);
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      `Invalid Last-Event-ID header ${shown}: must be the id of an event this stream sent (a whole number, 0 or more); reconnect without it to start from the first event.`,
      { issues: [{ path: "headers.last-event-id", message: "must be a whole number, 0 or more" }] },
    );
  }
  return seq;
}
