import { jsonBodyOf } from "@nerva/core/http";
import type { ChatRoutes } from "@nerva/core/ui-stream";
import type { FastifyPluginAsync, FastifyReply } from "fastify";

/**
 * A Fastify plugin with the chat routes of `@nerva/core/ui-stream` (`createChatRoutes`), for the
 * AI SDK's `useChat` with `DefaultChatTransport` and resumable streams: `POST {path}` starts an
 * answer and streams it, `GET {path}/:id/stream` resumes the chat's active answer (204 when
 * none), `POST {path}/:id/stop` cancels it. Register it after `nervaPlugin`; refusals (400, 401,
 * 404) are answered like every other error of the app, before the response is taken over.
 *
 * @example
 * await app.register(nervaPlugin, { requireAuth: true });
 * await app.register(nervaChat(createChatRoutes({ queue, handler: "chat_agent" })));
 */
export function nervaChat(chat: ChatRoutes, options: { path?: string } = {}): FastifyPluginAsync {
  const base = (options.path ?? "/api/chat").replace(/\/+$/, "");
  return async (app) => {
    app.post(base, async (request, reply) => {
      await chat.send({
        body: jsonBodyOf(request),
        ctx: request.nervaCtx,
        res: reply.raw,
        beforeWrite: () => takeOver(reply),
      });
    });
    app.get<{ Params: { id: string } }>(`${base}/:id/stream`, async (request, reply) => {
      await chat.resume({
        chatId: request.params.id,
        ctx: request.nervaCtx,
        headers: request.headers,
        res: reply.raw,
        beforeWrite: () => takeOver(reply),
      });
    });
    app.post<{ Params: { id: string } }>(`${base}/:id/stop`, async (request) => {
      const run = await chat.stop({ chatId: request.params.id, ctx: request.nervaCtx });
      return { runId: run.id, status: run.status };
    });
  };
}

/** Takes the response over from Fastify, keeping the headers set so far (request id, CORS…). */
export function takeOver(reply: FastifyReply): void {
  reply.hijack();
  const raw = reply.raw;
  if (raw.headersSent) return;
  for (const [name, value] of Object.entries(reply.getHeaders())) {
    if (value !== undefined) raw.setHeader(name, value);
  }
}
