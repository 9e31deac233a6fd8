import type { ExecContext } from "@nerva/core";
import { getRequestScope, writeSSE, type SSEOptions, type SSEOutcome } from "@nerva/core/http";
import type { Response } from "express";

/**
 * `writeSSE` of `@nerva/core/http` on an Express response, with a failure reported to this
 * request's `onError`/logger: streams `source` (e.g. `orchestrator.stream(message, ctx)`, or a
 * run's events mapped by `options.message`) as Server-Sent Events with ids, at the client's pace;
 * on client disconnect `ctx.cancel()` and `return()` on the source. Resolves with how the stream
 * ended; never rejects.
 *
 * @example
 * app.post("/chat/stream", (req, res) => sendSSE(res, orchestrator.stream(req.body.message, req.nervaCtx), req.nervaCtx));
 */
export function sendSSE<T>(
  res: Response,
  source: AsyncIterable<T>,
  ctx: ExecContext | null = null,
  options: SSEOptions<T> = {},
): Promise<SSEOutcome> {
  const scope = getRequestScope(res.req);
  return writeSSE(res, source, ctx, {
    ...options,
    onError: (err) => {
      scope?.report(err);
      options.onError?.(err);
    },
  });
}
