import type { ExecContext } from "@nerva/core";
import { writeSSE, type SSEOptions, type SSEOutcome } from "@nerva/core/http";
import type { FastifyReply } from "fastify";
import { kNervaScope } from "./plugin.js";

/**
 * `writeSSE` of `@nerva/core/http` on a Fastify reply: takes the response over from Fastify
 * (`reply.hijack()`), keeping the headers set so far (request id, CORS...), and reports a failure
 * to the plugin's `onError`/logger. Streams `source` (e.g. `orchestrator.stream(message, ctx)`, or
 * a run's events mapped by `options.message`) as Server-Sent Events with ids, at the client's
 * pace; on client disconnect `ctx.cancel()` plus `return()` on the source. Resolves with how the
 * stream ended; never rejects.
 *
 * @example
 * app.post("/chat/stream", (request, reply) =>
 *   sendSSE(reply, orchestrator.stream(request.body.message, request.nervaCtx), request.nervaCtx));
 */
export function sendSSE<T>(
  reply: FastifyReply,
  source: AsyncIterable<T>,
  ctx: ExecContext | null = null,
  options: SSEOptions<T> = {},
): Promise<SSEOutcome> {
  const scope = (reply.request as { [kNervaScope]?: { report(e: unknown): void } | null })[
    kNervaScope
  ];
  reply.hijack();
  const raw = reply.raw;
  if (!raw.headersSent) {
    for (const [name, value] of Object.entries(reply.getHeaders())) {
      if (value !== undefined) raw.setHeader(name, value);
    }
  }
  return writeSSE(raw, source, ctx, {
    ...options,
    onError: (err) => {
      scope?.report(err);
      options.onError?.(err);
    },
  });
}
