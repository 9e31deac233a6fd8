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
import { nervaPlugin, sendSse } from "./index.js";

/**
 * Where the app's own auth (@fastify/jwt) runs: an onRequest hook added before or after the
 * plugin, a preHandler hook, or the routes' own onRequest option.
 */
const AUTH_PLACEMENTS = ["preHandler", "onRequest-before", "onRequest-after", "route"] as const;

const verify = async (request: FastifyRequest) => {
  if (request.headers.authorization !== undefined) await request.jwtVerify();
};

/** The contract's routes on Fastify, plus `GET /crash` (an error with its own status). */
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
  if (auth === "preHandler") app.addHook("preHandler", verify);
  const routeAuth = auth === "route" ? { onRequest: [verify] } : {};

  app.get("/whoami", routeAuth, async (request) =>
    routes.whoami(request.nervaCtx, request.nervaCtx),
  );
  app.post<{ Body: { message: unknown } }>("/chat", routeAuth, async (request, reply) => {
    const { status, body } = await routes.chat(request.nervaCtx, request.body.message);
    return reply.code(status).send(body);
  });
  app.post<{ Body: { message: unknown } }>("/chat/stream", routeAuth, (request, reply) => {
    const ctx = request.nervaCtx;
    return sendSse(reply, routes.stream(ctx, request.body.message), ctx);
  });
  app.get<{ Params: { code: string } }>("/fail/:code", async (request) => {
    throw routes.failure(request.params.code);
  });
  app.get("/crash", async () => {
    throw Object.assign(new Error("teapot"), { statusCode: 418 });
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

  it("leaves errors that are not NervaErrors to Fastify's own handler", async () => {
    const app = await build(setup());
    apps.push(app);
    const url = await app.listen({ port: 0, host: "127.0.0.1" });
    const res = await fetch(`${url}/crash`);
    expect(res.status).toBe(418);
    expect(await res.json()).toMatchObject({ statusCode: 418, message: "teapot" });
  });
});
