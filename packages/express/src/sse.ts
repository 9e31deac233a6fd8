import type { ExecContext } from "@nerva/core";
import { getRequestScope, writeSSE, type SSEOptions, type SSEOutcome } from "@nerva/core/http";
import type { Response } from "express";

/**
 * Streams `source` (e.g. `orchestrator.stream(message, ctx)`) to the client as Server-Sent Events:
 * SSE headers, one event per chunk flushed as it is produced, a final `done` event, an `error`
 * event if the source throws, and on client disconnect `ctx.cancel()` (the handler's `ctx.signal`
 * aborts) and `return()` on the source. Resolves with how the stream ended; never rejects.
 *
 * @example
 * app.post("/chat/stream", (req, res) => sendSSE(res, orchestrator.stream(req.body.message, req.nervaCtx), req.nervaCtx));
 */
export function sendSSE(
  res: Response,
  source: AsyncIterable<unknown>,
  ctx: ExecContext | null = null,
  options: SSEOptions = {},
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
