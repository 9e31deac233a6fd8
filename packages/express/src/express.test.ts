import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import {
  describeBridgeContract,
  type BridgeContractSetup,
  type BridgeContractServer,
} from "@nerva/core/testing";
import express, { type RequestHandler } from "express";
import { jwtVerify } from "jose";
import { jsonBodyOf } from "@nerva/core/http";
import { nervaErrorHandler, nervaMiddleware, sendSSE } from "./index.js";

/** Where the app's own auth middleware sits relative to nervaMiddleware. */
const AUTH_PLACEMENTS = ["before-middleware", "after-middleware"] as const;

/** The app's own auth: verifies a bearer JWT with jose and sets req.user to its claims. */
const jwtAuth = (secretText: string): RequestHandler => {
  const secret = new TextEncoder().encode(secretText);
  return async (req, res, next) => {
    const header = req.headers.authorization;
    if (header?.startsWith("Bearer ") !== true) return next();
    try {
      const { payload } = await jwtVerify(header.slice(7), secret);
      (req as { user?: unknown }).user = payload;
      next();
    } catch {
      res.status(401).json({ error: "bad token" });
    }
  };
};

/** The contract's routes on Express. */
function buildApp({ auth, options, jwtSecret, routes }: BridgeContractSetup) {
  const app = express();
  if (auth === "before-middleware") app.use(jwtAuth(jwtSecret));
  // Before the body parser, so that even a body the parser refuses is answered with a request id.
  app.use(nervaMiddleware(options));
  app.use(express.json());
  if (auth === "after-middleware") app.use(jwtAuth(jwtSecret));
  app.use((req, _res, next) => {
    if (req.headers["x-contract-crash"] === "middleware") throw routes.crash("middleware");
    next();
  });
  app.get("/whoami", (req, res) => {
    const ctx = req.nervaCtx;
    res.json(routes.whoami(ctx, req.nervaCtx));
  });
  app.post("/chat", async (req, res) => {
    const { status, body } = await routes.chat(jsonBodyOf(req).message, req.nervaCtx);
    res.status(status).json(body);
  });
  app.post("/chat/stream", (req, res) => {
    const ctx = req.nervaCtx;
    return sendSSE(res, routes.stream(jsonBodyOf(req).message, ctx), ctx);
  });
  app.get("/fail/:code", (req) => {
    throw routes.failure(req.params.code);
  });
  app.get("/crash", () => {
    throw routes.crash("route");
  });
  app.use(nervaErrorHandler());
  return app;
}

async function start(setup: BridgeContractSetup): Promise<BridgeContractServer> {
  const server = http.createServer(buildApp(setup));
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

describeBridgeContract("@nerva/express", start, { authPlacements: AUTH_PLACEMENTS });
