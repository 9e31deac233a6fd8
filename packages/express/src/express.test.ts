import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
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
import express, { type RequestHandler } from "express";
import { SignJWT, jwtVerify } from "jose";
import { afterAll, describe, expect, it } from "vitest";
import { nervaErrorHandler, nervaMiddleware, sendSse, type NervaExpressOptions } from "./index.js";

const secret = new TextEncoder().encode("express-bridge-test-secret-0123456789");
const mint = (sub: string, claims: Record<string, unknown> = {}) =>
  new SignJWT(claims)
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(sub)
    .setIssuedAt()
    .setExpirationTime("5m")
    .sign(secret);

/** The app's own auth: verifies a bearer JWT with jose and sets req.user to its claims. */
const jwtAuth: RequestHandler = async (req, res, next) => {
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

type Order = "auth-before" | "auth-after" | "no-auth";

function buildApp(order: Order, options: NervaExpressOptions = {}) {
  const app = express();
  app.use(express.json());
  if (order === "auth-before") app.use(jwtAuth);
  app.use(nervaMiddleware({ onError: () => undefined, ...options }));
  if (order === "auth-after") app.use(jwtAuth);
  app.get("/whoami", (req, res) => {
    const ctx = req.nervaCtx;
    res.json({
      userId: ctx.userId,
      sessionId: ctx.sessionId,
      roles: ctx.permissions.roles,
      requestId: ctx.requestId,
      traceId: ctx.traceId,
      same: req.nervaCtx === ctx,
    });
  });
  app.post("/chat", async (req, res) => {
    const ctx = req.nervaCtx;
    const response = await orchestrator.handle(req.body?.message, ctx);
    res
      .status(httpStatusOfResult(response))
      .json({ response, userId: ctx.userId, requestId: ctx.requestId });
  });
  app.post("/chat/stream", (req, res) => {
    const ctx = req.nervaCtx;
    return sendSse(res, orchestrator.stream(String(req.body?.message), ctx), ctx);
  });
  app.get("/fail/:code", (req) => {
    const code = req.params.code as ErrorCode;
    throw new NervaError(code, `failed with ${code}`, {
      details: { retryAfterSeconds: 7, retryAt: Date.now() + 30_000 },
    });
  });
  app.get("/crash", () => {
    throw new Error("not a Nerva error");
  });
  app.use(nervaErrorHandler());
  return app;
}

const servers: http.Server[] = [];
async function listen(app: express.Express): Promise<string> {
  const server = http.createServer(app);
  servers.push(server);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
afterAll(async () => {
  await runtime.close();
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

const json = async (res: Response) => (await res.json()) as Record<string, unknown>;
const bearer = async (sub: string, claims?: Record<string, unknown>) => ({
  authorization: `Bearer ${await mint(sub, claims)}`,
});

describe.each(["auth-before", "auth-after"] as const)("@nerva/express with %s", (order) => {
  let url: string;
  it("starts a real server on port 0", async () => {
    url = await listen(buildApp(order));
    expect(url).toMatch(/:\d+$/);
  });

  it("resolves req.nervaCtx from the user the app's auth set", async () => {
    const res = await fetch(`${url}/whoami`, {
      headers: await bearer("alice", { roles: ["admin"], sid: "s-1" }),
    });
    const body = await json(res);
    expect(body).toMatchObject({ userId: "alice", sessionId: "s-1", roles: ["admin"], same: true });
    expect(res.headers.get("x-request-id")).toBe(body.requestId);
  });

  it("keeps 200 concurrent users apart", async () => {
    const users = Array.from({ length: 200 }, (_, i) => `user-${order}-${i}`);
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
});

describe("@nerva/express security defaults", () => {
  it("ignores identity headers, bearer tokens and client request ids unless trusted", async () => {
    const url = await listen(buildApp("no-auth"));
    const token = await mint("alice");
    const res = await fetch(`${url}/whoami`, {
      headers: { authorization: `Bearer ${token}`, "x-user-id": "mallory", "x-request-id": "mine" },
    });
    const body = await json(res);
    expect(body.userId).toBeNull();
    expect(body.requestId).not.toBe("mine");
    expect(JSON.stringify(body)).not.toContain(token);

    const trusting = await listen(
      buildApp("no-auth", { trustIdentityHeaders: true, trustRequestId: true }),
    );
    const trusted = await json(
      await fetch(`${trusting}/whoami`, {
        headers: { "x-user-id": "gateway-user", "x-request-id": "mine" },
      }),
    );
    expect(trusted).toMatchObject({ userId: "gateway-user", requestId: "mine" });
  });

  it("answers 401 with requireAuth, whichever side of the middleware auth runs", async () => {
    for (const order of ["auth-before", "auth-after"] as const) {
      const url = await listen(buildApp(order, { requireAuth: true }));
      const res = await fetch(`${url}/whoami`);
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toBe("Bearer");
      expect(((await json(res)).error as { code: string }).code).toBe("UNAUTHENTICATED");
      expect((await fetch(`${url}/whoami`, { headers: await bearer("bob") })).status).toBe(200);
    }
  });

  it("answers 500 when resolve throws, never an anonymous context", async () => {
    const url = await listen(
      buildApp("auth-before", {
        resolve: () => {
          throw new Error("user service down");
        },
      }),
    );
    const res = await fetch(`${url}/whoami`);
    expect(res.status).toBe(500);
    const body = await json(res);
    expect(JSON.stringify(body)).not.toContain("user service down");
    expect((body.error as { requestId: string }).requestId).toBe(res.headers.get("x-request-id"));
  });

  it("joins the caller's trace", async () => {
    const url = await listen(buildApp("no-auth"));
    const traceId = "0af7651916cd43dd8448eb211c80319c";
    const body = await json(
      await fetch(`${url}/whoami`, {
        headers: { traceparent: `00-${traceId}-b7ad6b7169203331-01` },
      }),
    );
    expect(body.traceId).toBe(traceId);
  });
});

describe("@nerva/express errors → status", () => {
  let url: string;
  it("starts", async () => {
    url = await listen(buildApp("auth-before"));
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
    if (status === 429) expect(res.headers.get("retry-after")).toBe("7");
    if (status === 503) expect(res.headers.get("retry-after")).toBe("7");
  });

  it("answers 400 with the validation issues of bad input", async () => {
    const res = await fetch(`${url}/chat`, {
      method: "POST",
      headers: { ...(await bearer("carol")), "content-type": "application/json" },
      body: JSON.stringify({ message: 42 }),
    });
    expect(res.status).toBe(400);
    const body = await json(res);
    expect(body.error).toMatchObject({
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
    // Five per minute per user, counted before routing: the refused request was one of them.
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

  it("leaves other errors to Express", async () => {
    const res = await fetch(`${url}/crash`);
    expect(res.status).toBe(500);
    expect(res.headers.get("content-type")).not.toMatch(/json/);
  });
});

describe("@nerva/express streaming", () => {
  let url: string;
  it("starts", async () => {
    url = await listen(buildApp("auth-before"));
  });

  it("streams chunks as SSE and ends with a done event carrying the result", async () => {
    const res = await fetch(`${url}/chat/stream`, {
      method: "POST",
      headers: { ...(await bearer("dave")), "content-type": "application/json" },
      body: JSON.stringify({ message: "words one two three" }),
    });
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(res.headers.get("x-request-id")).toMatch(/[0-9a-f-]{36}/);
    const events: SseEvent[] = [];
    for await (const e of readSseEvents(res.body as AsyncIterable<Uint8Array>)) events.push(e);
    expect(events.filter((e) => e.event === "message").map((e) => e.data)).toEqual([
      "words ",
      "one ",
      "two ",
      "three ",
    ]);
    const done = JSON.parse(events.at(-1)?.data ?? "null") as {
      requestId: string;
      result: OrchestratorResponse;
    };
    expect(events.at(-1)?.event).toBe("done");
    expect(done.requestId).toBe(res.headers.get("x-request-id"));
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
