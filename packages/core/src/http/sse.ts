import type { ServerResponse } from "node:http";
import type { ExecContext } from "../context/exec-context.js";
import {
  createSSEEventSource,
  type SSEEventSourceOptions,
  type SSEMessage,
  type SSEOutcome,
} from "./sse-event-source.js";

/** Response headers of a Server-Sent Events stream. */
const SSE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache, no-transform",
  connection: "keep-alive",
  // nginx and similar proxies buffer responses unless told not to.
  "x-accel-buffering": "no",
});

/**
 * Options of {@link writeSSE}: those of the event source (`message`, `done`, `onError`) and the
 * heartbeat.
 *
 * @example
 * await writeSSE(res, queue.events(id, { afterSeq }), null, {
 *   message: (e) => ({ id: e.seq, event: e.type, data: clientRunEvent(e) }),
 * });
 */
export interface SSEOptions<T = unknown> extends Omit<SSEEventSourceOptions<T>, "ctx"> {
  /** Seconds between `: ping` comments that keep idle proxies from closing. Default 15; `false`: none. */
  heartbeatSeconds?: number | false;
}

/**
 * The wire form of one event: `event:` (none for `message`), `id:`, then one `data:` line per
 * line of data (clients join them with `\n`; one space after `data:` keeps a leading space).
 * Expects a checked message (the event source's): no line break in `id` or `event`.
 */
export function formatSSE(message: SSEMessage & { readonly data: string }): string {
  let out =
    message.event === undefined || message.event === "message" ? "" : `event: ${message.event}\n`;
  if (message.id !== undefined) out += `id: ${message.id}\n`;
  for (const line of message.data.split(/\r\n|\r|\n/)) out += `data: ${line}\n`;
  return out + "\n";
}

/**
 * The one Server-Sent Events writer: streams `source` to `res` through
 * `createSSEEventSource` — SSE headers (headers already set on `res`, such as the request id, are
 * kept), one event per item with its `id` and `event` name, flushed as produced, a final `done`
 * event if configured, or an `error` event (same body as the JSON error answers, no stack or
 * internal message) if the source throws. Pull-based: the next item is taken from `source` only
 * once the socket accepted the previous one (it waits for `drain`), so a client that stops reading
 * pauses the producer instead of growing the heap. Idle, it writes a `: ping` comment every
 * `heartbeatSeconds`. When the client leaves (even while waiting for `drain`): `ctx.cancel()` and
 * `return()` on the source. Resolves (never rejects) with how it ended.
 *
 * An answer's chunks get running ids (1, 2, 3…); a run's events map their `seq` to the id, so a
 * client reconnecting with `Last-Event-ID` (see `lastEventSeq`) misses nothing.
 *
 * @example
 * // An answer:
 * await writeSSE(res, orchestrator.stream(message, ctx), ctx);
 * // A run's events, resumable:
 * await writeSSE(res, queue.events(id, { afterSeq: lastEventSeq(req) }), null, {
 *   message: (e) => ({ id: e.seq, event: e.type, data: clientRunEvent(e) }),
 * });
 */
export async function writeSSE<T>(
  res: ServerResponse,
  source: AsyncIterable<T>,
  ctx: ExecContext | null = null,
  options: SSEOptions<T> = {},
): Promise<SSEOutcome> {
  const events = createSSEEventSource(source, {
    ctx,
    ...(options.message === undefined ? {} : { message: options.message }),
    ...(options.done === undefined ? {} : { done: options.done }),
    ...(options.onError === undefined ? {} : { onError: options.onError }),
  });
  if (res.destroyed || (res.writableEnded && !res.writableFinished)) {
    events.cancel();
    return "disconnected";
  }
  let wake: (() => void) | null = null;
  const onClose = (): void => {
    if (res.writableFinished) return;
    events.cancel();
    wake?.();
  };
  res.once("close", onClose);
  if (!res.headersSent) {
    res.statusCode = 200;
    for (const [name, value] of Object.entries(SSE_HEADERS)) res.setHeader(name, value);
    res.removeHeader("content-length");
    res.flushHeaders();
  }
  res.socket?.setNoDelay(true);
  const heartbeat =
    options.heartbeatSeconds === false
      ? null
      : setInterval(
          () => {
            // A backed-up socket has a write pending already; never queue more behind it.
            if (events.outcome === null && !res.writableNeedDrain) res.write(": ping\n\n");
          },
          (options.heartbeatSeconds ?? 15) * 1000,
        );
  heartbeat?.unref();

  try {
    for (;;) {
      const step = await events.next();
      if (step.done === true) {
        // The source ended without a final event (or the client left): end what is still open.
        if (events.outcome === "done" && !res.writableEnded) res.end();
        break;
      }
      const wire = formatSSE(step.value);
      if (events.outcome !== null) {
        // The final event (done or error) ends the response.
        res.end(wire);
        break;
      }
      if (!res.write(wire) && events.outcome === null) {
        // Backpressure: pull nothing more until the socket took this event (or the client left).
        await new Promise<void>((resolve) => {
          const resume = (): void => {
            res.off("drain", resume);
            wake = null;
            resolve();
          };
          wake = resume;
          res.on("drain", resume);
        });
      }
    }
  } finally {
    if (heartbeat !== null) clearInterval(heartbeat);
    res.off("close", onClose);
  }
  return events.outcome ?? "disconnected";
}
