import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import {
  BRIDGE_CONTRACT_JWT_SECRET,
  createBridgeContractRoutes,
  describeBridgeContract,
  type BridgeContractSetup,
  type BridgeContractServer,
} from "@nerva/core/testing";
import express, { type RequestHandler } from "express";
import { jwtVerify } from "jose";
import { afterAll, describe, expect, it } from "vitest";
import { nervaErrorHandler, nervaMiddleware, sendSse } from "./index.js";

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

/** The contract's routes on Express, plus `GET /crash` (an error that is not a NervaError). */
function buildApp({ auth, options, jwtSecret, routes }: BridgeContractSetup) {
  const app = express();
  app.use(express.json());
  if (auth === "before-middleware") app.use(jwtAuth(jwtSecret));
  app.use(nervaMiddleware(options));
  if (auth === "after-middleware") app.use(jwtAuth(jwtSecret));
  app.get("/whoami", (req, res) => {
    const ctx = req.nervaCtx;
    res.json(routes.whoami(ctx, req.nervaCtx));
  });
  app.post("/chat", async (req, res) => {
    const { status, body } = await routes.chat(req.nervaCtx, req.body?.message);
    res.status(status).json(body);
  });
  app.post("/chat/stream", (req, res) => {
    const ctx = req.nervaCtx;
    return sendSse(res, routes.stream(ctx, String(req.body?.message)), ctx);
  });
  app.get("/fail/:code", (req) => {
    throw routes.failure(req.params.code);
  });
  app.get("/crash", () => {
    throw new Error("not a Nerva error");
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

describe("@nerva/express errors that are not NervaErrors", () => {
  const routes = createBridgeContractRoutes();
  let server: BridgeContractServer | undefined;
  afterAll(async () => {
    await server?.close();
    await routes.close();
  });

  it("leaves them to Express", async () => {
    server = await start({
      auth: "before-middleware",
      options: { onError: () => undefined },
      jwtSecret: BRIDGE_CONTRACT_JWT_SECRET,
      routes,
    });
    const res = await fetch(`${server.url}/crash`);
    expect(res.status).toBe(500);
    expect(res.headers.get("content-type")).not.toMatch(/json/);
  });
});
