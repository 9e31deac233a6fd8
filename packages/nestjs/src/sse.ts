import type { ServerResponse } from "node:http";
import type { ExecContext } from "@nerva/core";
import {
  createSSEEventSource,
  getRequestScope,
  writeSSE,
  type SSEEventSourceOptions,
  type SSEOptions,
  type SSEOutcome,
} from "@nerva/core/http";
import { Logger, type MessageEvent } from "@nestjs/common";
import { Observable } from "rxjs";
import { rawResponseOf } from "./nerva-ctx.decorator.js";

const logger = new Logger("Nerva");

/** Express's `res` is the Node response; Fastify's `reply` wraps it in `raw`. */
interface PlatformResponse {
  raw?: ServerResponse;
  hijack?: () => unknown;
  getHeaders?: () => Record<string, unknown>;
}

/** The Node response behind a platform response, taken over from Fastify when it is a reply. */
function nodeResponse(res: ServerResponse | PlatformResponse): ServerResponse {
  const reply = res as PlatformResponse;
  if (reply.raw === undefined || typeof reply.hijack !== "function") return res as ServerResponse;
  reply.hijack();
  const raw = reply.raw;
  if (!raw.headersSent) {
    // Headers set on the reply so far (the request id, CORS...) would be lost with the reply.
    for (const [name, value] of Object.entries(reply.getHeaders?.() ?? {})) {
      if (value !== undefined) raw.setHeader(name, value as string);
    }
  }
  return raw;
}

/** The bridge's `onError` for 5xx errors of this response's request, then the caller's own. */
function reporter(
  raw: ServerResponse,
  options: { onError?: (error: unknown) => void },
): (error: unknown) => void {
  return (error) => {
    const scope = getRequestScope(raw.req);
    if (scope !== undefined) scope.report(error);
    else logger.error("a stream failed", error);
    options.onError?.(error);
  };
}

/**
 * Streams `source` (e.g. `orchestrator.stream(message, ctx)`) as Server-Sent Events on the
 * response of a route that takes it with `@Res()`, on either platform (Express's `res`, Fastify's
 * `reply`), through `writeSSE` of `@nerva/core/http`: pull-based, so a client that stops reading
 * pauses the producer; one event per item with its id (a run's events mapped by
 * `options.message`), a final `done` event for an answer, an `error` event if the source throws
 * (a 5xx goes to the module's `onError` once); on client disconnect `ctx.cancel()` and `return()`
 * on the source. Resolves with how the stream ended; never rejects.
 *
 * @example
 * @Post("chat/stream")
 * stream(@Body() body: { message: string }, @NervaCtx() ctx: ExecContext, @Res() res: unknown) {
 *   return sendSSE(res, this.orchestrator.stream(body.message, ctx), ctx);
 * }
 */
export function sendSSE<T>(
  res: unknown,
  source: AsyncIterable<T>,
  ctx: ExecContext | null = null,
  options: SSEOptions<T> = {},
): Promise<SSEOutcome> {
  const raw = nodeResponse(res as ServerResponse | PlatformResponse);
  return writeSSE(raw, source, ctx, { ...options, onError: reporter(raw, options) });
}

/** Resolves once `raw` can take more data (or the client left): never more than one event ahead. */
function writable(raw: ServerResponse): Promise<void> | null {
  if (!raw.writableNeedDrain || raw.destroyed) return null;
  return new Promise((resolve) => {
    const go = (): void => {
      raw.off("drain", go);
      raw.off("close", go);
      resolve();
    };
    raw.on("drain", go);
    raw.on("close", go);
  });
}

/**
 * Turns an async iterable of chunks (e.g. `orchestrator.stream(message, ctx)`) into the Observable
 * a NestJS `@Sse()` handler returns, from the same event source as {@link sendSSE}: one `message`
 * event per chunk with a running id (or what `options.message` maps an item to, such as a run's
 * event with its seq as the id), a final `done` event `{ requestId, result }`, an `error` event
 * `{ status, error }` if it throws (a 5xx goes to the module's `onError` once, then to
 * `options.onError`). Pull-based like {@link sendSSE}: with the
 * `ctx` of `@NervaCtx()`, the next chunk is taken only once the response's socket took the
 * previous one, so a client that stops reading pauses the producer. When the client disconnects,
 * Nest unsubscribes: the context is cancelled and the iterator's `return()` is called.
 *
 * @example
 * @Sse("chat/stream")
 * stream(@Query("message") message: string, @NervaCtx() ctx: ExecContext) {
 *   return toSSEObservable(this.orchestrator.stream(message, ctx), ctx);
 * }
 */
export function toSSEObservable<T>(
  source: AsyncIterable<T>,
  ctx: ExecContext | null = null,
  options: Omit<SSEEventSourceOptions<T>, "ctx"> = {},
): Observable<MessageEvent> {
  return new Observable<MessageEvent>((subscriber) => {
    const raw = ctx === null ? undefined : rawResponseOf(ctx);
    const events = createSSEEventSource(source, {
      ...options,
      ctx,
      onError:
        raw === undefined
          ? (error) => {
              if (options.onError !== undefined) options.onError(error);
              else logger.error("a stream failed", error);
            }
          : reporter(raw, options),
    });
    void (async () => {
      for (;;) {
        const step = await events.next();
        if (step.done === true || subscriber.closed) return;
        const { id, event, data } = step.value;
        subscriber.next({
          data,
          ...(id === undefined ? {} : { id }),
          ...(event === "message" ? {} : { type: event }),
        });
        if (events.outcome !== null) {
          subscriber.complete();
          return;
        }
        // Nest writes the event into the response on a later tick; once it did, a socket that
        // is backed up says so, and nothing more is pulled until it drained.
        await new Promise((resolve) => setImmediate(resolve));
        const wait = raw === undefined ? null : writable(raw);
        if (wait !== null) await wait;
      }
    })();
    return () => events.cancel();
  });
}
