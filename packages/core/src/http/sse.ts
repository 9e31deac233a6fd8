import type { ServerResponse } from "node:http";
import type { ExecContext } from "../context/exec-context.js";
import { createSSEEventSource, formatSSEEvent, type SSEOutcome } from "./sse-event-source.js";

/**
 * Response headers of a Server-Sent Events stream.
 *
 * @example
 * res.writeHead(200, SSE_HEADERS);
 */
export const SSE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache, no-transform",
  connection: "keep-alive",
  // nginx and similar proxies buffer responses unless told not to.
  "x-accel-buffering": "no",
});

/**
 * Options of {@link writeSSE}.
 *
 * @example
 * await writeSSE(res, stream, ctx, { heartbeatSeconds: false });
 */
export interface SSEOptions {
  /** Seconds between `: ping` comments that keep idle proxies from closing. Default 15; `false`: none. */
  heartbeatSeconds?: number | false;
  /**
   * Data of the final `done` event, from what the iterable returned (an async generator's return
   * value, or the `response` of an `orchestrator.stream()`). Default: `{ requestId, result }`.
   */
  done?: (returned: unknown) => unknown;
  /** Called once with the error a failing iterable threw (after the `error` event was written). */
  onError?: (error: unknown) => void;
}

/**
 * Streams `source` to `res` as Server-Sent Events, through {@link createSSEEventSource}: SSE
 * headers (headers already set on `res`, such as the request id, are kept), one event per chunk
 * flushed as produced, a final `done` event, or an `error` event (same body as the JSON error
 * answers) if the iterable throws. Pull-based: the next chunk is taken from `source` only once the
 * socket accepted the previous one (it waits for `drain`), so a client that stops reading pauses
 * the producer instead of growing the heap. On client disconnect: `ctx.cancel()` and `return()` on
 * the iterator. Resolves (never rejects) with how it ended.
 *
 * @example
 * const outcome = await writeSSE(res, orchestrator.stream(message, ctx), ctx);
 */
export async function writeSSE(
  res: ServerResponse,
  source: AsyncIterable<unknown>,
  ctx: ExecContext | null = null,
  options: SSEOptions = {},
): Promise<SSEOutcome> {
  const events = createSSEEventSource(source, {
    ctx,
    done: options.done,
    onError: options.onError,
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
      if (step.done === true) break;
      const wire = formatSSEEvent(step.value.data, step.value.type);
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
