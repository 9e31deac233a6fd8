import fastifyJwt from "@fastify/jwt";
import {
  BRIDGE_CONTRACT_JWT_SECRET,
  createBridgeContractRoutes,
  describeBridgeContract,
  mintBridgeContractToken,
  type BridgeContractServer,
  type BridgeContractSetup,
} from "@nerva/core/testing";
import Fastify, { type FastifyInstance, type FastifyRequest } from "fastify";
import { afterAll, describe, expect, it } from "vitest";
import { jsonBodyOf } from "@nerva/core/http";
import { nervaPlugin, replyNervaError, sendSSE } from "./index.js";

/**
 * Where the app's own auth (@fastify/jwt) runs: an onRequest hook added before or after the
 * plugin, a preHandler hook, or the routes' own onRequest option.
 */
const AUTH_PLACEMENTS = ["preHandler", "onRequest-before", "onRequest-after", "route"] as const;

const verify = async (request: FastifyRequest) => {
  if (request.headers.authorization !== undefined) await request.jwtVerify();
};

/** The contract's routes on Fastify. */
async function build({
  auth,
  options,
  jwtSecret,
  routes,
}: BridgeContractSetup): Promise<FastifyInstance> {
  const app = Fastify();
  await app.register(fastifyJwt, { secret: jwtSecret });
  if (auth === "onRequest-before") app.addHook("onRequest", verify);
  await app.register(nervaPlugin, options);
  if (auth === "onRequest-after") app.addHook("onRequest", verify);
  app.addHook("onRequest", async (request) => {
    if (request.headers["x-contract-crash"] === "middleware") throw routes.crash("middleware");
  });
  if (auth === "preHandler") app.addHook("preHandler", verify);
  const routeAuth = auth === "route" ? { onRequest: [verify] } : {};

  app.get("/whoami", routeAuth, async (request) =>
    routes.whoami(request.nervaCtx, request.nervaCtx),
  );
  app.post("/chat", routeAuth, async (request, reply) => {
    const { status, body } = await routes.chat(jsonBodyOf(request).message, request.nervaCtx);
    return reply.code(status).send(body);
  });
  app.post("/chat/stream", routeAuth, (request, reply) => {
    const ctx = request.nervaCtx;
    return sendSSE(reply, routes.stream(jsonBodyOf(request).message, ctx), ctx);
  });
  app.get<{ Params: { code: string } }>("/fail/:code", async (request) => {
    throw routes.failure(request.params.code);
  });
  app.get("/crash", async () => {
    throw routes.crash("route");
  });
  return app;
}

async function start(setup: BridgeContractSetup): Promise<BridgeContractServer> {
  const app = await build(setup);
  return { url: await app.listen({ port: 0, host: "127.0.0.1" }), close: () => app.close() };
}

describeBridgeContract("@nerva/fastify", start, { authPlacements: AUTH_PLACEMENTS });

describe("@nerva/fastify on its own", () => {
  const routes = createBridgeContractRoutes();
  const apps: FastifyInstance[] = [];
  const setup = (options: BridgeContractSetup["options"] = {}): BridgeContractSetup => ({
    auth: "preHandler",
    options: { onError: () => undefined, ...options },
    jwtSecret: BRIDGE_CONTRACT_JWT_SECRET,
    routes,
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await routes.close();
  });

  it("resolves the context and answers 401 with requireAuth through inject", async () => {
    const app = await build(setup({ requireAuth: true }));
    apps.push(app);
    const ok = await app.inject({
      method: "GET",
      url: "/whoami",
      headers: { authorization: `Bearer ${mintBridgeContractToken("ivy")}` },
    });
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toMatchObject({ userId: "ivy", requestId: ok.headers["x-request-id"] });
    const denied = await app.inject({ method: "GET", url: "/whoami" });
    expect(denied.statusCode).toBe(401);
    expect(denied.headers["www-authenticate"]).toBe("Bearer");
    expect(denied.json().error.code).toBe("UNAUTHENTICATED");
  });

  it("rejects options it does not know", async () => {
    const app = Fastify();
    apps.push(app);
    await expect(app.register(nervaPlugin, { requireAuht: true } as never).ready()).rejects.toThrow(
      /options/,
    );
  });

  it("never takes over the app's root error handler: the app's own handler answers, without FSTWRN004", async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error & { code?: string }) => warnings.push(w.code ?? w.name);
    process.on("warning", onWarning);
    try {
      const app = await build(setup());
      apps.push(app);
      app.setErrorHandler((error, request, reply) =>
        request.url === "/fail/RATE_LIMITED"
          ? replyNervaError(error, request, reply)
          : reply.code(418).send({ mine: String((error as Error).message).length > 0 }),
      );
      const url = await app.listen({ port: 0, host: "127.0.0.1" });
      const mine = await fetch(`${url}/crash`);
      expect(mine.status).toBe(418);
      expect(await mine.json()).toEqual({ mine: true });
      const nerva = await fetch(`${url}/fail/RATE_LIMITED`);
      expect(nerva.status).toBe(429);
      expect(((await nerva.json()) as { error: unknown }).error).toMatchObject({
        code: "RATE_LIMITED",
        requestId: nerva.headers.get("x-request-id"),
      });
      await new Promise((r) => setImmediate(r));
      expect(warnings).not.toContain("FSTWRN004");
    } finally {
      process.off("warning", onWarning);
    }
  });

  it("leaves every error to Fastify with errorHandler: false", async () => {
    const app = await build(setup({ errorHandler: false } as BridgeContractSetup["options"]));
    apps.push(app);
    const res = await app.inject({ method: "GET", url: "/fail/NOT_FOUND" });
    // Fastify's default handler answers with its own body.
    expect(res.json()).toMatchObject({ statusCode: 500, error: "Internal Server Error" });
  });
});
