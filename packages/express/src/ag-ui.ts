import type { AgUiRoute } from "@nerva/core/ag-ui";
import { jsonBodyOf } from "@nerva/core/http";
import type { RequestHandler } from "express";

/**
 * Mounts the AG-UI route of `@nerva/core/ag-ui` (`createAgUiRoute`) on Express: `POST {path}`
 * (default `/ag-ui`) takes an AG-UI `RunAgentInput` and streams the run's AG-UI events, as
 * @ag-ui/client's `HttpAgent` expects. Needs `nervaMiddleware()` and a JSON body parser before it
 * and `nervaErrorHandler()` after it (refusals arrive there before anything was written). Other
 * requests pass through.
 *
 * @example
 * app.use(nervaMiddleware(), express.json());
 * app.use(nervaAgUi(createAgUiRoute({ queue, handler: "chat_agent" })));
 * app.use(nervaErrorHandler());
 */
export function nervaAgUi(route: AgUiRoute, options: { path?: string } = {}): RequestHandler {
  const path = (options.path ?? "/ag-ui").replace(/\/+$/, "");
  return function nervaAgUiRoute(req, res, next) {
    if (req.method !== "POST" || (req.path !== path && req.path !== `${path}/`)) {
      next();
      return;
    }
    let work: Promise<unknown>;
    try {
      work = route.run({ body: jsonBodyOf(req), ctx: req.nervaCtx, res });
    } catch (err) {
      next(err);
      return;
    }
    work.catch(next);
  };
}
