import type { ExecContext } from "@nerva/core";
import { finalResult, toHttpError } from "@nerva/core/http";
import { Logger, type MessageEvent } from "@nestjs/common";
import { Observable } from "rxjs";

const logger = new Logger("Nerva");

/**
 * Turns an async iterable of chunks (e.g. `orchestrator.stream(message, ctx)`) into the Observable
 * a NestJS `@Sse()` handler returns: one `message` event per chunk as it is produced, a final
 * `done` event `{ requestId, result }` (what the iterable returned), an `error` event
 * `{ status, error }` if it throws (a 5xx also goes to `options.onError`, by default Nest's
 * `Logger`). When the client disconnects, Nest unsubscribes: the context is cancelled (the
 * handler's `ctx.signal` aborts) and the iterator's `return()` is called.
 *
 * @example
 * @Sse("chat/stream")
 * stream(@Query("message") message: string, @NervaCtx() ctx: ExecContext) {
 *   return toSseObservable(this.orchestrator.stream(message, ctx), ctx);
 * }
 */
export function toSseObservable(
  source: AsyncIterable<unknown>,
  ctx: ExecContext | null = null,
  options: { onError?: (error: unknown) => void } = {},
): Observable<MessageEvent> {
  return new Observable<MessageEvent>((subscriber) => {
    const iterator = source[Symbol.asyncIterator]();
    const requestId = ctx?.requestId ?? null;
    let finished = false;
    void (async () => {
      try {
        for (;;) {
          const step = await iterator.next();
          if (subscriber.closed) return;
          if (step.done === true) {
            const result = await finalResult(source, step.value);
            finished = true;
            if (subscriber.closed) return;
            subscriber.next({ type: "done", data: { requestId, result: result ?? null } });
            subscriber.complete();
            return;
          }
          const chunk = typeof step.value === "string" ? step.value : JSON.stringify(step.value);
          subscriber.next({ data: chunk ?? "" });
        }
      } catch (err) {
        finished = true;
        if (subscriber.closed) return;
        const { status, body } = toHttpError(err, requestId);
        if (status >= 500) {
          if (options.onError !== undefined) options.onError(err);
          else logger.error(`request ${requestId ?? "(no id)"} failed mid-stream`, err);
        }
        subscriber.next({ type: "error", data: { status, ...body } });
        subscriber.complete();
      }
    })();
    return () => {
      if (finished) return;
      ctx?.cancel("client disconnected");
      void Promise.resolve(iterator.return?.()).catch(() => undefined);
    };
  });
}
