import type { ServerResponse } from "node:http";

/** Express's `res` is the Node response; Fastify's `reply` wraps it in `raw`. */
interface PlatformResponse {
  raw?: ServerResponse;
  hijack?: () => unknown;
  getHeaders?: () => Record<string, unknown>;
}

/**
 * What the chat routes of `@nerva/core/ui-stream` (`createChatRoutes`), the AG-UI route of
 * `@nerva/core/ag-ui` (`createAgUiRoute`) and an MCP handler (`createMcpHandler` of
 * `@nerva/core/mcp-server`) write to, from the response a route takes with `@Res()`
 * on either platform: the Node response, and a
 * `beforeWrite` that takes it over from Fastify (keeping the headers set so far) only once the
 * request passed its checks, so that a refusal (400, 401, 404) still goes through Nest's
 * exception filters.
 *
 * @example
 * @Post("api/chat")
 * send(@Body() body: unknown, @NervaCtx() ctx: ExecContext, @Res() res: unknown) {
 *   return this.chat.send({ body, ctx, ...chatResponse(res) });
 * }
 */
export function chatResponse(res: unknown): { res: ServerResponse; beforeWrite: () => void } {
  const reply = res as PlatformResponse;
  if (reply.raw === undefined || typeof reply.hijack !== "function") {
    return { res: res as ServerResponse, beforeWrite: () => undefined };
  }
  const raw = reply.raw;
  return {
    res: raw,
    beforeWrite: () => {
      reply.hijack?.();
      if (raw.headersSent) return;
      // Headers set on the reply so far (the request id, CORS...) would be lost with the reply.
      for (const [name, value] of Object.entries(reply.getHeaders?.() ?? {})) {
        if (value !== undefined) raw.setHeader(name, value as string);
      }
    },
  };
}
