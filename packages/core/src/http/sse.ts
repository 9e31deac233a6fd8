import type { ServerResponse } from "node:http";
import type { ExecContext } from "../context/exec-context.js";
import { toHttpError } from "./status.js";

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
 * Formats one SSE event. Multi-line data becomes several `data:` lines (clients join them with
 * `\n`); a leading space survives because one space always follows `data:`.
 *
 * @example
 * formatSseEvent("hello\nworld"); // "data: hello\ndata: world\n\n"
 * formatSseEvent('{"ok":true}', "done"); // "event: done\ndata: {\"ok\":true}\n\n"
 */
export function formatSseEvent(data: string, event?: string): string {
  let out = event === undefined ? "" : `event: ${event.replace(/[\r\n]/g, "")}\n`;
  for (const line of data.split(/\r\n|\r|\n/)) out += `data: ${line}\n`;
  return out + "\n";
}

/**
 * Options of {@link writeSse}.
 *
 * @example
 * await writeSse(res, stream, ctx, { heartbeatSeconds: false });
 */
export interface SseOptions {
  /** Seconds between `: ping` comments that keep idle proxies from closing. Default 15; `false`: none. */
  heartbeatSeconds?: number | false;
  /**
   * Data of the final `done` event, from what the iterable returned (an async generator's return
   * value, or the `response` of an `orchestrator.stream()`). Default: `{ requestId, result }`.
   */
  done?: (returned: unknown) => unknown;
  /** Called with the error a failing iterable threw (after the `error` event was written). */
  onError?: (error: unknown) => void;
}

/**
 * What a finished stream produced: the async generator's return value, or, for a stream with a
 * `response` promise (`orchestrator.stream()`), the final response.
 *
 * @example
 * const result = await finalResult(stream, step.value); // { text, status, ... }
 */
export async function finalResult(
  source: AsyncIterable<unknown>,
  returned: unknown,
): Promise<unknown> {
  if (returned !== undefined) return returned;
  const response = (source as { response?: unknown }).response;
  if (
    typeof response === "object" &&
    response !== null &&
    typeof (response as PromiseLike<unknown>).then === "function"
  ) {
    return await (response as PromiseLike<unknown>);
  }
  return undefined;
}

/**
 * How an SSE response ended.
 *
 * @example
 * if ((await writeSse(res, stream, ctx)) === "disconnected") metrics.count("sse.abandoned");
 */
export type SseOutcome = "done" | "error" | "disconnected";

const CLOSED = Symbol("closed");

/**
 * Streams `source` to `res` as Server-Sent Events: SSE headers (headers already set on `res`,
 * such as the request id, are kept), one event per chunk flushed as produced, backpressure
 * honoured, a final `done` event, an `error` event (same body as the JSON error answers) if the
 * iterable throws, and on client disconnect `ctx.cancel()` plus `return()` on the iterator.
 * Resolves (never rejects) with how it ended.
 *
 * @example
 * const outcome = await writeSse(res, orchestrator.stream(message, ctx), ctx);
 */
export async function writeSse(
  res: ServerResponse,
  source: AsyncIterable<unknown>,
  ctx: ExecContext | null = null,
  options: SseOptions = {},
): Promise<SseOutcome> {
  const requestId = ctx?.requestId ?? null;
  const iterator = source[Symbol.asyncIterator]();
  let wake: ((value: typeof CLOSED) => void) | null = null;
  let closed = res.destroyed || (res.writableEnded && !res.writableFinished);
  const onClose = (): void => {
    if (res.writableFinished) return;
    closed = true;
    ctx?.cancel("client disconnected");
    wake?.(CLOSED);
  };
  /** Resolves with `promise`, or with CLOSED as soon as the client goes away. */
  const orClosed = <T>(promise: Promise<T>): Promise<T | typeof CLOSED> =>
    closed
      ? Promise.resolve(CLOSED)
      : new Promise<T | typeof CLOSED>((resolve, reject) => {
          wake = resolve;
          promise.then(resolve, reject);
        });
  const disconnected = (): SseOutcome => {
    ctx?.cancel("client disconnected");
    void Promise.resolve(iterator.return?.()).catch(() => undefined);
    return "disconnected";
  };

  if (closed) return disconnected();
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
            if (!closed) res.write(": ping\n\n");
          },
          (options.heartbeatSeconds ?? 15) * 1000,
        );
  heartbeat?.unref();

  try {
    for (;;) {
      const step = await orClosed(iterator.next());
      if (step === CLOSED) return disconnected();
      if (step.done === true) {
        const returned = await finalResult(source, step.value);
        const data =
          options.done === undefined
            ? { requestId, result: returned ?? null }
            : options.done(returned);
        res.end(formatSseEvent(JSON.stringify(data ?? null), "done"));
        return "done";
      }
      const chunk = typeof step.value === "string" ? step.value : JSON.stringify(step.value);
      if (!res.write(formatSseEvent(chunk ?? ""))) {
        const drained = await orClosed(
          new Promise<void>((resolve) => res.once("drain", () => resolve())),
        );
        if (drained === CLOSED) return disconnected();
      }
    }
  } catch (err) {
    if (closed) return disconnected();
    const { status, body } = toHttpError(err, requestId);
    res.end(formatSseEvent(JSON.stringify({ status, ...body }), "error"));
    options.onError?.(err);
    return "error";
  } finally {
    wake = null;
    if (heartbeat !== null) clearInterval(heartbeat);
    res.off("close", onClose);
  }
}
