import http from "node:http";
import fastifyJwt from "@fastify/jwt";
import {
  DeclarativePolicyEngine,
  ErrorCode,
  InProcessRuntime,
  NervaError,
  Orchestrator,
  RuleRouter,
  type OrchestratorResponse,
} from "@nerva/core";
import { httpStatusOfResult, readSseEvents, type SseEvent } from "@nerva/core/http";
import Fastify, { type FastifyInstance, type FastifyRequest } from "fastify";
import { SignJWT } from "jose";
import { afterAll, describe, expect, it } from "vitest";
import { nervaPlugin, sendSse, type NervaFastifyOptions } from "./index.js";

const secretText = "fastify-bridge-test-secret-0123456789";
const secret = new TextEncoder().encode(secretText);
const mint = (sub: string, claims: Record<string, unknown> = {}) =>
  new SignJWT(claims)
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(sub)
    .setIssuedAt()
    .setExpirationTime("5m")
    .sign(secret);
const bearer = async (sub: string, claims?: Record<string, unknown>) => ({
  authorization: `Bearer ${await mint(sub, claims)}`,
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Observations made by handlers, checked by the tests. */
const seen = { aborted: [] as string[] };

const runtime = new InProcessRuntime({ timeoutSeconds: 5, circuitBreaker: false });
const orchestrator = new Orchestrator({
  router: new RuleRouter({
    rules: [
      { handler: "ticker", keywords: ["ticker"] },
      { handler: "words", keywords: ["words"] },
      { handler: "secret_agent", keywords: ["secret"] },
    ],
    defaultHandler: "echo",
  }),
  runtime,
  policy: new DeclarativePolicyEngine({
    version: 1,
    rules: [
      {
        name: "no-secrets",
        effect: "deny",
        kind: "agent",
        names: ["secret_agent"],
        reason: "Secrets are off limits.",
      },
    ],
    rateLimits: [{ name: "per-user", per: "user", limit: 5, windowSeconds: 60 }],
  }),
});
runtime.register("echo", async (input, ctx) => {
  await sleep(Math.random() * 5);
  return `${ctx.userId ?? "anonymous"}: ${input.message}`;
});
runtime.register("ticker", async function* (_input, ctx) {
  try {
    yield "tick";
    await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
    yield "never";
  } finally {
    if (ctx.signal.aborted) seen.aborted.push(ctx.requestId);
  }
});
runtime.register("words", async function* (input) {
  for (const word of input.message.split(" ")) yield `${word} `;
});
runtime.register("secret_agent", async () => "the secret");

type AuthAt = "onRequest-before" | "onRequest-after" | "preHandler" | "route" | "none";

const verify = async (request: FastifyRequest) => {
  if (request.headers.authorization !== undefined) await request.jwtVerify();
};

const apps: FastifyInstance[] = [];
async function build(authAt: AuthAt, options: NervaFastifyOptions = {}) {
  const app = Fastify();
  apps.push(app);
  await app.register(fastifyJwt, { secret: secretText });
  if (authAt === "onRequest-before") app.addHook("onRequest", verify);
  await app.register(nervaPlugin, { onError: () => undefined, ...options });
  if (authAt === "onRequest-after") app.addHook("onRequest", verify);
  if (authAt === "preHandler") app.addHook("preHandler", verify);
  const routeAuth = authAt === "route" ? { onRequest: [verify] } : {};

  app.get("/whoami", routeAuth, async (request) => {
    const ctx = request.nervaCtx;
    return {
      userId: ctx.userId,
      sessionId: ctx.sessionId,
      roles: ctx.permissions.roles,
      requestId: ctx.requestId,
      traceId: ctx.traceId,
      same: request.nervaCtx === ctx,
    };
  });
  app.post<{ Body: { message: unknown } }>("/chat", routeAuth, async (request, reply) => {
    const ctx = request.nervaCtx;
    const response = await orchestrator.handle(request.body.message as string, ctx);
    return reply
      .code(httpStatusOfResult(response))
      .send({ response, userId: ctx.userId, requestId: ctx.requestId });
  });
  app.post<{ Body: { message: string } }>("/chat/stream", routeAuth, (request, reply) => {
    const ctx = request.nervaCtx;
    return sendSse(reply, orchestrator.stream(request.body.message, ctx), ctx);
  });
  app.get<{ Params: { code: ErrorCode } }>("/fail/:code", async (request) => {
    throw new NervaError(request.params.code, `failed with ${request.params.code}`, {
      details: { retryAfterSeconds: 7, retryAt: Date.now() + 30_000 },
    });
  });
  app.get("/crash", async () => {
    throw Object.assign(new Error("teapot"), { statusCode: 418 });
  });
  return app;
}

async function listen(app: FastifyInstance): Promise<string> {
  return app.listen({ port: 0, host: "127.0.0.1" });
}

afterAll(async () => {
  await runtime.close();
  for (const app of apps) await app.close();
});

const json = async (res: Response) => (await res.json()) as Record<string, unknown>;

describe.each(["onRequest-before", "onRequest-after", "preHandler", "route"] as const)(
  "@nerva/fastify with auth in %s",
  (authAt) => {
    let url: string;
    it("starts a real server on port 0", async () => {
      url = await listen(await build(authAt));
      expect(url).toMatch(/:\d+$/);
    });

    it("resolves request.nervaCtx from the user @fastify/jwt set", async () => {
      const res = await fetch(`${url}/whoami`, {
        headers: await bearer("alice", { roles: ["admin"], sid: "s-1" }),
      });
      const body = await json(res);
      expect(body).toMatchObject({
        userId: "alice",
        sessionId: "s-1",
        roles: ["admin"],
        same: true,
      });
      expect(res.headers.get("x-request-id")).toBe(body.requestId);
    });

    it("keeps 200 concurrent users apart", async () => {
      const users = Array.from({ length: 200 }, (_, i) => `user-${authAt}-${i}`);
      const answers = await Promise.all(
        users.map(async (sub) => {
          const res = await fetch(`${url}/chat`, {
            method: "POST",
            headers: { ...(await bearer(sub)), "content-type": "application/json" },
            body: JSON.stringify({ message: `hi from ${sub}` }),
          });
          return {
            sub,
            status: res.status,
            header: res.headers.get("x-request-id"),
            body: await json(res),
          };
        }),
      );
      for (const { sub, status, header, body } of answers) {
        expect(status).toBe(200);
        expect(body.userId).toBe(sub);
        expect(body.requestId).toBe(header);
        expect((body.response as OrchestratorResponse).text).toBe(`${sub}: hi from ${sub}`);
      }
      expect(new Set(answers.map((a) => a.header)).size).toBe(users.length);
    });
  },
);

describe("@nerva/fastify with inject", () => {
  it("resolves the context and answers 401 with requireAuth", async () => {
    const app = await build("preHandler", { requireAuth: true });
    const ok = await app.inject({ method: "GET", url: "/whoami", headers: await bearer("ivy") });
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toMatchObject({ userId: "ivy", requestId: ok.headers["x-request-id"] });
    const denied = await app.inject({ method: "GET", url: "/whoami" });
    expect(denied.statusCode).toBe(401);
    expect(denied.headers["www-authenticate"]).toBe("Bearer");
    expect(denied.json().error.code).toBe("UNAUTHENTICATED");
  });
});

describe("@nerva/fastify security defaults", () => {
  it("ignores identity headers, bearer tokens and client request ids unless trusted", async () => {
    const app = await build("none");
    const token = await mint("alice");
    const res = await app.inject({
      url: "/whoami",
      headers: { authorization: `Bearer ${token}`, "x-user-id": "mallory", "x-request-id": "mine" },
    });
    expect(res.json()).toMatchObject({ userId: null });
    expect(res.json().requestId).not.toBe("mine");
    expect(res.body).not.toContain(token);

    const trusting = await build("none", { trustIdentityHeaders: true, trustRequestId: true });
    const trusted = await trusting.inject({
      url: "/whoami",
      headers: { "x-user-id": "gateway-user", "x-request-id": "mine" },
    });
    expect(trusted.json()).toMatchObject({ userId: "gateway-user", requestId: "mine" });
  });

  it("answers 500 when resolve throws, never an anonymous context", async () => {
    const url = await listen(
      await build("preHandler", {
        resolve: () => {
          throw new Error("user service down");
        },
      }),
    );
    const res = await fetch(`${url}/whoami`);
    expect(res.status).toBe(500);
    expect(await res.text()).not.toContain("user service down");
  });

  it("joins the caller's trace", async () => {
    const url = await listen(await build("none"));
    const traceId = "0af7651916cd43dd8448eb211c80319c";
    const body = await json(
      await fetch(`${url}/whoami`, {
        headers: { traceparent: `00-${traceId}-b7ad6b7169203331-01` },
      }),
    );
    expect(body.traceId).toBe(traceId);
  });

  it("rejects options it does not know", async () => {
    const app = Fastify();
    apps.push(app);
    await expect(app.register(nervaPlugin, { requireAuht: true } as never).ready()).rejects.toThrow(
      /options/,
    );
  });
});

describe("@nerva/fastify errors → status", () => {
  let url: string;
  it("starts", async () => {
    url = await listen(await build("preHandler"));
  });

  it.each([
    ["INVALID_INPUT", 400],
    ["PERMISSION_DENIED", 403],
    ["POLICY_DENIED", 403],
    ["APPROVAL_PENDING", 202],
    ["RATE_LIMITED", 429],
    ["TIMEOUT", 504],
    ["CIRCUIT_OPEN", 503],
    ["UNAUTHENTICATED", 401],
    ["NOT_FOUND", 404],
    ["INTERNAL", 500],
  ])("%s → %i", async (code, status) => {
    const res = await fetch(`${url}/fail/${code}`);
    expect(res.status).toBe(status);
    const body = await json(res);
    expect((body.error as { requestId: string }).requestId).toBe(res.headers.get("x-request-id"));
    if (status === 429 || status === 503) expect(res.headers.get("retry-after")).toBe("7");
  });

  it("answers 400 with the validation issues of bad input", async () => {
    const res = await fetch(`${url}/chat`, {
      method: "POST",
      headers: { ...(await bearer("carol")), "content-type": "application/json" },
      body: JSON.stringify({ message: 42 }),
    });
    expect(res.status).toBe(400);
    expect((await json(res)).error).toMatchObject({
      code: "INVALID_INPUT",
      issues: [{ path: "message" }],
    });
  });

  it("answers the orchestrator's refusals: policy 403, rate limit 429 with Retry-After", async () => {
    const auth = { ...(await bearer("frank")), "content-type": "application/json" };
    const post = (message: string) =>
      fetch(`${url}/chat`, { method: "POST", headers: auth, body: JSON.stringify({ message }) });
    const denied = await post("tell me the secret");
    expect(denied.status).toBe(403);
    expect(((await json(denied)).error as { code: string }).code).toBe("POLICY_DENIED");
    for (let i = 0; i < 4; i++) expect((await post(`hello ${i}`)).status).toBe(200);
    const limited = await post("one too many");
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  it("answers 422 when no agent may take an anonymous request", async () => {
    const res = await fetch(`${url}/chat`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ message: "hello" }),
    });
    expect(res.status).toBe(422);
    expect(((await json(res)).response as OrchestratorResponse).status).toBe("wrong_handler");
  });

  it("leaves other errors to Fastify's own handler", async () => {
    const res = await fetch(`${url}/crash`);
    expect(res.status).toBe(418);
    expect(await json(res)).toMatchObject({ statusCode: 418, message: "teapot" });
  });
});

describe("@nerva/fastify streaming", () => {
  let url: string;
  it("starts", async () => {
    url = await listen(await build("preHandler"));
  });

  it("streams chunks as SSE, keeping the request id header, and ends with done", async () => {
    const res = await fetch(`${url}/chat/stream`, {
      method: "POST",
      headers: { ...(await bearer("dave")), "content-type": "application/json" },
      body: JSON.stringify({ message: "words one two three" }),
    });
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const requestId = res.headers.get("x-request-id");
    expect(requestId).toMatch(/[0-9a-f-]{36}/);
    const events: SseEvent[] = [];
    for await (const e of readSseEvents(res.body as AsyncIterable<Uint8Array>)) events.push(e);
    expect(events.filter((e) => e.event === "message").map((e) => e.data)).toEqual([
      "words ",
      "one ",
      "two ",
      "three ",
    ]);
    expect(events.at(-1)?.event).toBe("done");
    const done = JSON.parse(events.at(-1)?.data ?? "null") as {
      requestId: string;
      result: OrchestratorResponse;
    };
    expect(done.requestId).toBe(requestId);
    expect(done.result).toMatchObject({ status: "success", text: "words one two three " });
  });

  it("cancels the handler when the client disconnects mid-stream", async () => {
    const auth = await bearer("erin");
    const requestId = await new Promise<string>((resolve, reject) => {
      const req = http.request(`${url}/chat/stream`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
      });
      req.on("error", () => undefined);
      req.on("response", (res) => {
        res.once("data", (chunk: Buffer) => {
          if (!chunk.toString().includes("tick")) reject(new Error(`unexpected ${String(chunk)}`));
          resolve(String(res.headers["x-request-id"]));
          req.destroy();
        });
      });
      req.end(JSON.stringify({ message: "ticker" }));
    });
    for (let i = 0; i < 100 && !seen.aborted.includes(requestId); i++) await sleep(10);
    expect(seen.aborted).toContain(requestId);
  });
});
