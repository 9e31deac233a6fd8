import type { Orchestrator } from "@nerva/core";
import { httpStatusOfResult, nervaErrorHandler, nervaMiddleware, sendSse } from "@nerva/express";
import express, { type Express, type RequestHandler } from "express";
import { USER_NAME, identityOf, type DevAuth, type TokenClaims } from "@nerva/example-kit";

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
  return async (req, res, next) => {
    const header = req.headers.authorization;
    if (header === undefined) return next();
    const token = /^Bearer (\S+)$/.exec(header)?.[1];
    try {
      if (token === undefined) throw new Error("not a bearer token");
      req.user = await auth.verify(token);
      next();
    } catch {
      res
        .status(401)
        .set("www-authenticate", 'Bearer error="invalid_token"')
        .json({
          error: { code: "UNAUTHENTICATED", message: "Invalid or expired token." },
        });
    }
  };
}

/**
 * The Express example: `POST /token` (dev only) mints a JWT, `POST /chat` answers with JSON and
 * `POST /chat/stream` with Server-Sent Events, both through the orchestrator with the caller's
 * identity in `req.nervaCtx`.
 */
export function createApp(options: { orchestrator: Orchestrator; auth: DevAuth }): Express {
  const { orchestrator, auth } = options;
  const app = express();
  app.use(express.json({ limit: "64kb" }));

  app.get("/", (_req, res) => {
    res.json({
      name: "nerva-express-example",
      endpoints: ["POST /token", "POST /chat", "POST /chat/stream"],
    });
  });

  // Development convenience: anyone can get a token. A real app gets tokens from its identity provider.
  app.post("/token", async (req, res) => {
    const user: unknown = req.body?.user;
    const roles: unknown = req.body?.roles ?? [];
    if (typeof user !== "string" || !USER_NAME.test(user) || !Array.isArray(roles)) {
      res.status(400).json({
        error: {
          code: "INVALID_INPUT",
          message: 'Send { "user": "alice", "roles"?: ["member"] }.',
        },
      });
      return;
    }
    res.json({
      ...(await auth.mint(
        user,
        roles.filter((r) => typeof r === "string"),
      )),
      tokenType: "Bearer",
    });
  });

  app.use(bearerAuth(auth));
  app.use(
    nervaMiddleware({
      requireAuth: true,
      timeoutSeconds: 30,
      // Identity comes from the verified token only; the client may pick one of its own sessions.
      resolve: (req) => identityOf(req.user, req.headers["x-session-id"]),
    }),
  );

  app.post("/chat", async (req, res) => {
    const ctx = req.nervaCtx;
    const response = await orchestrator.handle(req.body?.message, ctx);
    res.status(httpStatusOfResult(response)).json({ ...response, requestId: ctx.requestId });
  });

  app.post("/chat/stream", (req, res) => {
    const ctx = req.nervaCtx;
    return sendSse(res, orchestrator.stream(req.body?.message, ctx), ctx);
  });

  app.use(nervaErrorHandler());
  return app;
}
