import { ErrorCode, NervaError } from "@nerva/core";
import { type TraceSink } from "@nerva/core/tracing";
import { jsonBodyOf } from "@nerva/core/http";
import { nervaAgUi, nervaChat, nervaErrorHandler, nervaMiddleware, sendSSE } from "@nerva/express";
import { chatPage } from "@nerva/chat-web/server";
import express, { type Express, type RequestHandler, type Response } from "express";
import {
  EXAMPLE_ENDPOINTS,
  chatRequestOf,
  identityOf,
  tokenRequestOf,
  type DevAuth,
  type ExampleAppDeps,
  type RouteAnswer,
  type TokenClaims,
} from "@nerva/example-kit";

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** Set by `bearerAuth` from a valid token. */
      user?: TokenClaims;
    }
  }
}

/** The app's own authentication: a valid bearer JWT sets `req.user`; a bad one is a 401. */
function bearerAuth(auth: DevAuth): RequestHandler {
  return async (req, _res, next) => {
    const header = req.headers.authorization;
    if (header === undefined) return next();
    const token = /^Bearer (\S+)$/.exec(header)?.[1];
    try {
      if (token === undefined) throw new Error("not a bearer token");
      req.user = await auth.verify(token);
    } catch {
      return next(
        new NervaError(ErrorCode.UNAUTHENTICATED, "Invalid or expired token.", {
          details: { wwwAuthenticate: 'Bearer error="invalid_token"' },
        }),
      );
    }
    next();
  };
}

const send = (res: Response, { status, body }: RouteAnswer) => void res.status(status).json(body);

/** Where the Express example serves the chat page (`apps/chat-web`, built by `pnpm build`). */
export const CHAT_PAGE_PATH = "/chat-ui";

/**
 * The Express example: `POST /token` (dev only) mints a JWT, `POST /chat` answers with JSON and
 * `POST /chat/stream` with Server-Sent Events, both through the orchestrator with the caller's
 * identity in `req.nervaCtx`; approvals (`POST /approvals/:id`, `POST /chat/resume`) and durable
 * runs (`/runs`) through the example service's route bodies; the protocols of frontends and other
 * agents (`/api/chat` for `useChat`, `/ag-ui`, `/mcp`) behind the same JWT auth; with
 * `chatPage`, the chat page at `CHAT_PAGE_PATH`. Every error, the body parser's included, is
 * answered by `nervaErrorHandler()` with the Nerva JSON error body.
 */
export function createApp(
  options: ExampleAppDeps & {
    /** Told of every request's spans and events (e.g. the trace viewer's store). */
    traceSink?: TraceSink | undefined;
    /** Serves the chat page: `{}` for the one `pnpm build` made, or `{ pageDir }`. */
    chatPage?: { pageDir?: string } | undefined;
  },
): Express {
  const { orchestrator, routes, protocols, auth, traceSink } = options;
  const app = express();
  // First, so that every answer (even to a body the parser refuses) carries the request id.
  app.use(
    nervaMiddleware({
      requireAuth: true,
      timeoutSeconds: 30,
      // Identity comes from the verified token only; the client may pick one of its own sessions.
      resolve: (req) => identityOf(req.user, req.headers["x-session-id"]),
      traceSink,
    }),
  );
  app.use(express.json({ limit: "64kb" }));
  // The page is public (static files); the API it calls needs the token its URL carries.
  if (options.chatPage !== undefined) app.use(CHAT_PAGE_PATH, chatPage(options.chatPage));

  app.get("/", (_req, res) => {
    res.json({
      name: "nerva-express-example",
      endpoints: EXAMPLE_ENDPOINTS,
    });
  });

  // Development convenience: anyone can get a token. A real app gets tokens from its identity provider.
  app.post("/token", async (req, res) => {
    const { user, roles } = tokenRequestOf(jsonBodyOf(req));
    res.json({ ...(await auth.mint(user, roles)), tokenType: "Bearer" });
  });

  app.use(bearerAuth(auth));

  app.post("/chat", async (req, res) =>
    send(res, await routes.chat(jsonBodyOf(req), req.nervaCtx)),
  );

  app.post("/chat/stream", (req, res) => {
    const ctx = req.nervaCtx;
    const { message } = chatRequestOf(jsonBodyOf(req));
    return sendSSE(res, orchestrator.stream(message, ctx), ctx);
  });

  app.post("/chat/resume", async (req, res) =>
    send(res, await routes.resume(jsonBodyOf(req), req.nervaCtx)),
  );
  app.post("/approvals/:id", async (req, res) =>
    send(res, await routes.decide(req.params.id, jsonBodyOf(req), req.nervaCtx)),
  );
  app.post("/runs", async (req, res) =>
    send(res, await routes.startRun(jsonBodyOf(req), req.nervaCtx)),
  );
  app.get("/runs/:id", async (req, res) =>
    send(res, await routes.getRun(req.params.id, req.nervaCtx)),
  );
  app.get("/runs/:id/events", async (req, res) => {
    const { source, options } = await routes.runEvents(req.params.id, req, req.nervaCtx);
    await sendSSE(res, source, null, options);
  });
  app.post("/runs/:id/cancel", async (req, res) =>
    send(res, await routes.cancelRun(req.params.id, req.nervaCtx)),
  );

  // useChat (`POST /api/chat`, `GET /api/chat/:id/stream`, `POST /api/chat/:id/stop`), AG-UI's
  // HttpAgent (`POST /ag-ui`) and MCP clients (`/mcp`), as the token's user.
  app.use(nervaChat(protocols.chat), nervaAgUi(protocols.agUi));
  app.all("/mcp", (req, res) => protocols.mcp.handle(req, res, req.nervaCtx, req.body));

  app.use(nervaErrorHandler());
  return app;
}
