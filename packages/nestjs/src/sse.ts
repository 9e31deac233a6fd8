import type { ExecContext } from "@nerva/core";
import { finalResult, reportError, toHttpError } from "@nerva/core/http";
import type { MessageEvent } from "@nestjs/common";
import { Observable } from "rxjs";

/**
 * Turns an async iterable of chunks (e.g. `orchestrator.stream(message, ctx)`) into the Observable
 * a NestJS `@Sse()` handler returns: one `message` event per chunk as it is produced, a final
 * `done` event `{ requestId, result }` (what the iterable returned), an `error` event
 * `{ status, error }` if it throws (a 5xx is reported to the module's `onError`). When the client disconnects, Nest unsubscribes: the context is
 * cancelled (the handler's `ctx.signal` aborts) and the iterator's `return()` is called.
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
        if (ctx !== null) reportError(ctx, err);
        const { status, body } = toHttpError(err, requestId);
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
