import type { ExecContext } from "@nerva/core";
import { writeSSE, type SSEOptions, type SSEOutcome } from "@nerva/core/http";
import type { FastifyReply } from "fastify";
import { kNervaScope } from "./plugin.js";

/**
 * Streams `source` (e.g. `orchestrator.stream(message, ctx)`) as Server-Sent Events. Takes the
 * response over from Fastify (`reply.hijack()`), keeping the headers set so far (request id,
 * CORS...); one event per chunk as produced, a final `done` event, an `error` event if the source
 * throws, and on client disconnect `ctx.cancel()` plus `return()` on the source. Resolves with how
 * the stream ended; never rejects.
 *
 * @example
 * app.post("/chat/stream", (request, reply) =>
 *   sendSSE(reply, orchestrator.stream(request.body.message, request.nervaCtx), request.nervaCtx));
 */
export function sendSSE(
  reply: FastifyReply,
  source: AsyncIterable<unknown>,
  ctx: ExecContext | null = null,
  options: SSEOptions = {},
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
