import { ErrorCode, NervaError, type Orchestrator } from "@nerva/core";
import { type TraceSink } from "@nerva/core/tracing";
import { httpStatusOfResult, jsonBodyOf } from "@nerva/core/http";
import { nervaErrorHandler, nervaMiddleware, sendSSE } from "@nerva/express";
import express, { type Express, type RequestHandler } from "express";
import {
  chatRequestOf,
  identityOf,
  tokenRequestOf,
  type DevAuth,
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

/**
 * The Express example: `POST /token` (dev only) mints a JWT, `POST /chat` answers with JSON and
 * `POST /chat/stream` with Server-Sent Events, both through the orchestrator with the caller's
 * identity in `req.nervaCtx`. Every error, the body parser's included, is answered by
 * `nervaErrorHandler()` with the Nerva JSON error body.
 */
export function createApp(options: {
  orchestrator: Orchestrator;
  auth: DevAuth;
  /** Told of every request's spans and events (e.g. the trace viewer's store). */
  traceSink?: TraceSink | undefined;
}): Express {
  const { orchestrator, auth, traceSink } = options;
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

  app.get("/", (_req, res) => {
    res.json({
      name: "nerva-express-example",
      endpoints: ["POST /token", "POST /chat", "POST /chat/stream"],
    });
  });

  // Development convenience: anyone can get a token. A real app gets tokens from its identity provider.
  app.post("/token", async (req, res) => {
    const { user, roles = [] } = tokenRequestOf(jsonBodyOf(req));
    res.json({ ...(await auth.mint(user, roles)), tokenType: "Bearer" });
  });

  app.use(bearerAuth(auth));

  app.post("/chat", async (req, res) => {
    const ctx = req.nervaCtx;
    const { message } = chatRequestOf(jsonBodyOf(req));
    const response = await orchestrator.handle(message, ctx);
    res.status(httpStatusOfResult(response)).json({ ...response, requestId: ctx.requestId });
  });

  app.post("/chat/stream", (req, res) => {
    const ctx = req.nervaCtx;
    const { message } = chatRequestOf(jsonBodyOf(req));
    return sendSSE(res, orchestrator.stream(message, ctx), ctx);
  });

  app.use(nervaErrorHandler());
  return app;
}
