import type { AgUiRoute } from "@nerva/core/ag-ui";
import { jsonBodyOf } from "@nerva/core/http";
import type { FastifyPluginAsync } from "fastify";
import { takeOver } from "./chat.js";

/**
 * A Fastify plugin with the AG-UI route of `@nerva/core/ag-ui` (`createAgUiRoute`): `POST {path}`
 * (default `/ag-ui`) takes an AG-UI `RunAgentInput` and streams the run's AG-UI events, as
 * @ag-ui/client's `HttpAgent` expects. Register it after `nervaPlugin`; refusals (400, 401, 404)
 * are answered like every other error of the app, before the response is taken over.
 *
 * @example
 * await app.register(nervaPlugin, { requireAuth: true });
 * await app.register(nervaAgUi(createAgUiRoute({ queue, handler: "chat_agent" })));
 */
export function nervaAgUi(route: AgUiRoute, options: { path?: string } = {}): FastifyPluginAsync {
  const path = (options.path ?? "/ag-ui").replace(/\/+$/, "");
  return async (app) => {
    app.post(path, async (request, reply) => {
      await route.run({
        body: jsonBodyOf(request),
        ctx: request.nervaCtx,
        res: reply.raw,
        beforeWrite: () => takeOver(reply),
      });
    });
  };
}
