import { createHmac } from "node:crypto";
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ExecContext } from "../context/exec-context.js";
import { NervaError, type ErrorCode } from "../errors.js";
import type { NervaHttpOptions } from "../http/options.js";
import { readSseEvents, type SseEvent } from "../http/sse-client.js";
import { httpStatusOfResult } from "../http/status.js";
import type { OrchestratorResponse } from "../middleware/types.js";
import { Orchestrator } from "../orchestrator/orchestrator.js";
import { DeclarativePolicyEngine } from "../policy/declarative-engine.js";
import { RuleRouter } from "../router/rule-router.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import type { AgentRuntime } from "../runtime/types.js";

/**
 * What the routes of a bridge contract server share, whatever the framework: the orchestrator and
 * runtime they run, and the bodies they answer with. Each framework still reads the context, sets
 * the status and streams the Server-Sent Events its own way, through its bridge.
 *
 * @example
 * app.post("/chat", async (req, res) => {
 *   const { status, body } = await routes.chat(req.nervaCtx, req.body?.message);
 *   res.status(status).json(body);
 * });
 */
export interface BridgeContractRoutes {
  /** Routes `ticker`, `words` and `secret` (denied by policy) by keyword, everything else to `echo`; 5 requests per user per minute. */
  readonly orchestrator: Orchestrator;
  readonly runtime: AgentRuntime;
  /** Body of `GET /whoami`, from the request's context read twice (`ctx`, then `again`). */
  whoami(ctx: ExecContext, again: ExecContext): Record<string, unknown>;
  /** Runs `orchestrator.handle`; answer `POST /chat` with this status and JSON body. */
  chat(
    ctx: ExecContext,
    message: unknown,
  ): Promise<{ status: number; body: Record<string, unknown> }>;
  /** The chunks `POST /chat/stream` sends as Server-Sent Events (with `ctx`). */
  stream(ctx: ExecContext, message: unknown): AsyncIterable<unknown>;
  /** What `GET /fail/:code` throws: a NervaError with that code and `retryAfterSeconds: 7`. */
  failure(code: string): NervaError;
  /** Stops the runtime. */
  close(): Promise<void>;
}

/**
 * What a bridge contract asks the framework to start, on 127.0.0.1 and port 0.
 *
 * The server serves, through the framework's bridge with `options`:
 * - `GET /whoami`: JSON `routes.whoami(ctx, again)`;
 * - `POST /chat` (JSON `{ message }`): `routes.chat(ctx, message)`'s status and JSON body;
 * - `POST /chat/stream` (JSON `{ message }`): `routes.stream(ctx, message)` as Server-Sent Events;
 * - `GET /fail/:code`: throws `routes.failure(code)` for the bridge's error handling to answer.
 *
 * When `auth` is not `null`, the app's own authentication sits at that place (one of the
 * `authPlacements` given to {@link describeBridgeContract}) in front of the first three routes. Like
 * most apps' auth it checks only requests that carry `Authorization: Bearer <jwt>`: it verifies the
 * HS256 JWT with `jwtSecret` (answering 401 when it is bad) and sets the request's user so that the
 * bridge's default `resolve` reads the claims `sub` (user id), `roles` and `sid` (session id).
 * When `auth` is `null` the app has no authentication at all.
 *
 * @example
 * const setup: BridgeContractSetup = { auth: null, options: { requireAuth: true }, jwtSecret, routes };
 */
export interface BridgeContractSetup {
  readonly auth: string | null;
  readonly options: NervaHttpOptions<unknown>;
  readonly jwtSecret: string;
  readonly routes: BridgeContractRoutes;
}

/**
 * A server started for a bridge contract.
 *
 * @example
 * const server: BridgeContractServer = { url: "http://127.0.0.1:40123", close: () => app.close() };
 */
export interface BridgeContractServer {
  readonly url: string;
  close(): Promise<void>;
}

/**
 * Starts the framework's server for one scenario of {@link describeBridgeContract}.
 *
 * @example
 * const start: BridgeContractStart = async ({ options, routes }) => listen(buildApp(options, routes));
 */
export type BridgeContractStart = (setup: BridgeContractSetup) => Promise<BridgeContractServer>;

/**
 * Options of {@link describeBridgeContract}.
 *
 * @example
 * const options: BridgeContractOptions = { authPlacements: ["before-middleware", "after-middleware"] };
 */
export interface BridgeContractOptions {
  /**
   * The places the app's authentication can sit in this framework (before or after the bridge's
   * middleware, in a hook, a guard...). The identity scenarios run once per place; the others on a
   * server with the first. Default: `["app"]`.
   */
  readonly authPlacements?: readonly string[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function createRoutes(onAborted: (requestId: string) => void): BridgeContractRoutes {
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
    // A little jitter, so that concurrent requests finish out of order.
    await sleep(Math.random() * 5);
    return `${ctx.userId ?? "anonymous"}: ${input.message}`;
  });
  runtime.register("ticker", async function* (_input, ctx) {
    try {
      yield "tick";
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
      yield "never";
    } finally {
      if (ctx.signal.aborted) onAborted(ctx.requestId);
    }
  });
  runtime.register("words", async function* (input) {
    for (const word of input.message.split(" ")) yield `${word} `;
  });
  runtime.register("secret_agent", async () => "the secret");

  return {
    orchestrator,
    runtime,
    whoami: (ctx, again) => ({
      userId: ctx.userId,
      sessionId: ctx.sessionId,
      roles: ctx.permissions.roles,
      requestId: ctx.requestId,
      traceId: ctx.traceId,
      same: ctx === again,
    }),
    chat: async (ctx, message) => {
      const response = await orchestrator.handle(message as string, ctx);
      return {
        status: httpStatusOfResult(response),
        body: { response, userId: ctx.userId, requestId: ctx.requestId },
      };
    },
    stream: (ctx, message) => orchestrator.stream(message as string, ctx),
    failure: (code) =>
      new NervaError(code as ErrorCode, `failed with ${code}`, {
        details: { retryAfterSeconds: 7, retryAt: Date.now() + 30_000 },
      }),
    close: () => runtime.close(),
  };
}

/**
 * The routes' shared parts for a framework's own tests next to {@link describeBridgeContract}
 * (same orchestrator and agents as the contract's). Close them when done.
 *
 * @example
 * const routes = createBridgeContractRoutes();
 * const server = await start({ auth: null, options: {}, jwtSecret: BRIDGE_CONTRACT_JWT_SECRET, routes });
 */
export function createBridgeContractRoutes(): BridgeContractRoutes {
  return createRoutes(() => undefined);
}

/**
 * HS256 secret of the bearer tokens the contract sends (also handed to `start` as `jwtSecret`).
 *
 * @example
 * await app.register(fastifyJwt, { secret: BRIDGE_CONTRACT_JWT_SECRET });
 */
export const BRIDGE_CONTRACT_JWT_SECRET = "nerva-bridge-contract-secret-0123456789abcdef";

/**
 * A bearer JWT (HS256, five minutes) for `sub` with extra claims, signed with
 * {@link BRIDGE_CONTRACT_JWT_SECRET}; made with node:crypto only.
 *
 * @example
 * await fetch(`${url}/whoami`, { headers: { authorization: `Bearer ${mintBridgeContractToken("alice")}` } });
 */
export function mintBridgeContractToken(sub: string, claims: Record<string, unknown> = {}): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const now = Math.floor(Date.now() / 1000);
  const signed = `${part({ alg: "HS256", typ: "JWT" })}.${part({ ...claims, sub, iat: now, exp: now + 300 })}`;
  const signature = createHmac("sha256", BRIDGE_CONTRACT_JWT_SECRET)
    .update(signed)
    .digest("base64url");
  return `${signed}.${signature}`;
}

const bearer = (sub: string, claims?: Record<string, unknown>) => ({
  authorization: `Bearer ${mintBridgeContractToken(sub, claims)}`,
});
const json = async (res: Response) => (await res.json()) as Record<string, unknown>;
const errorOf = async (res: Response) =>
  (await json(res)).error as { code: string; requestId: string };
const UUID = /^[0-9a-f-]{36}$/;

async function sseEvents(res: Response): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  for await (const e of readSseEvents(res.body as AsyncIterable<Uint8Array>)) events.push(e);
  return events;
}

/**
 * The behaviour every HTTP bridge (`@nerva/express`, `@nerva/fastify`, `@nerva/nestjs`) must share,
 * checked over real HTTP against servers `start` launches on port 0: the context resolved from the
 * user the app's auth set (wherever that auth sits), 200 concurrent users kept apart, `requireAuth`,
 * identity headers and client request ids ignored unless trusted, the caller's `traceparent`,
 * NervaErrors and refused runs mapped to their HTTP status, Server-Sent Events ending with `done`
 * or `error`, and a client disconnect cancelling the handler. See {@link BridgeContractSetup} for
 * the routes the server must serve.
 *
 * @example
 * describeBridgeContract("@nerva/express", async ({ auth, options, jwtSecret, routes }) => {
 *   const app = buildApp(auth, options, jwtSecret, routes);
 *   return listen(app);
 * }, { authPlacements: ["before-middleware", "after-middleware"] });
 */
export function describeBridgeContract(
  label: string,
  start: BridgeContractStart,
  options: BridgeContractOptions = {},
): void {
  const placements = options.authPlacements ?? ["app"];
  const [firstPlacement] = placements;
  if (firstPlacement === undefined) throw new Error("authPlacements must name at least one place");

  describe(`bridge contract: ${label}`, () => {
    const aborted: string[] = [];
    const reported: { error: unknown; requestId: string | null }[] = [];
    const routes = createRoutes((requestId) => aborted.push(requestId));
    const open = new Set<BridgeContractServer>();

    const serve = async (auth: string | null, bridge: NervaHttpOptions<unknown> = {}) => {
      const server = await start({
        auth,
        jwtSecret: BRIDGE_CONTRACT_JWT_SECRET,
        routes,
        options: { onError: (error, requestId) => reported.push({ error, requestId }), ...bridge },
      });
      open.add(server);
      return server;
    };
    /** Runs `fn` against a server of its own, closed afterwards. */
    const withServer = async (
      auth: string | null,
      bridge: NervaHttpOptions<unknown>,
      fn: (url: string) => Promise<void>,
    ) => {
      const server = await serve(auth, bridge);
      try {
        await fn(server.url);
      } finally {
        open.delete(server);
        await server.close();
      }
    };

    afterAll(async () => {
      for (const server of open) await server.close();
      await routes.close();
    });

    describe.each(placements)("with the app's auth at %s", (placement) => {
      let url: string;
      beforeAll(async () => {
        ({ url } = await serve(placement));
      });

      it("resolves the context from the user the app's auth set", async () => {
        expect(url).toMatch(/^http:\/\/[^/]+:\d+$/);
        const res = await fetch(`${url}/whoami`, {
          headers: bearer("alice", { roles: ["admin"], sid: "s-1" }),
        });
        expect(res.status).toBe(200);
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
        const users = Array.from({ length: 200 }, (_, i) => `user-${placement}-${i}`);
        const answers = await Promise.all(
          users.map(async (sub) => {
            const res = await fetch(`${url}/chat`, {
              method: "POST",
              headers: { ...bearer(sub), "content-type": "application/json" },
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

      it("answers 401 with requireAuth when the app's auth set no user", async () => {
        await withServer(placement, { requireAuth: true }, async (strict) => {
          const res = await fetch(`${strict}/whoami`);
          expect(res.status).toBe(401);
          expect(res.headers.get("www-authenticate")).toBe("Bearer");
          expect((await errorOf(res)).code).toBe("UNAUTHENTICATED");
          const ok = await fetch(`${strict}/whoami`, { headers: bearer("bob") });
          expect(ok.status).toBe(200);
          expect((await json(ok)).userId).toBe("bob");
        });
      });
    });

    describe("security defaults", () => {
      it("ignores identity headers, bearer tokens and client request ids unless trusted", async () => {
        const token = mintBridgeContractToken("alice");
        await withServer(null, {}, async (url) => {
          const res = await fetch(`${url}/whoami`, {
            headers: {
              authorization: `Bearer ${token}`,
              "x-user-id": "mallory",
              "x-request-id": "mine",
            },
          });
          const text = await res.text();
          const body = JSON.parse(text) as Record<string, unknown>;
          expect(body.userId).toBeNull();
          expect(body.requestId).not.toBe("mine");
          expect(text).not.toContain(token);
        });
        await withServer(
          null,
          { trustIdentityHeaders: true, trustRequestId: true },
          async (url) => {
            const trusted = await json(
              await fetch(`${url}/whoami`, {
                headers: { "x-user-id": "gateway-user", "x-request-id": "mine" },
              }),
            );
            expect(trusted).toMatchObject({ userId: "gateway-user", requestId: "mine" });
          },
        );
      });

      it("answers 500 when resolve throws, never an anonymous context", async () => {
        const resolve = () => {
          throw new Error("user service down");
        };
        await withServer(firstPlacement, { resolve }, async (url) => {
          const res = await fetch(`${url}/whoami`);
          expect(res.status).toBe(500);
          const text = await res.text();
          expect(text).not.toContain("user service down");
          const requestId = res.headers.get("x-request-id");
          expect(requestId).toMatch(UUID);
          expect((JSON.parse(text) as { error: { requestId: string } }).error.requestId).toBe(
            requestId,
          );
          const report = reported.find((r) => r.requestId === requestId);
          expect((report?.error as Error | undefined)?.message).toContain("user service down");
        });
      });

      it("joins the caller's trace", async () => {
        const traceId = "0af7651916cd43dd8448eb211c80319c";
        await withServer(null, {}, async (url) => {
          const body = await json(
            await fetch(`${url}/whoami`, {
              headers: { traceparent: `00-${traceId}-b7ad6b7169203331-01` },
            }),
          );
          expect(body.traceId).toBe(traceId);
        });
      });
    });

    describe("errors → status", () => {
      let url: string;
      beforeAll(async () => {
        ({ url } = await serve(firstPlacement));
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
        expect((await errorOf(res)).requestId).toBe(res.headers.get("x-request-id"));
        if (status === 429 || status === 503) expect(res.headers.get("retry-after")).toBe("7");
      });

      it("answers 400 with the validation issues of bad input", async () => {
        const res = await fetch(`${url}/chat`, {
          method: "POST",
          headers: { ...bearer("carol"), "content-type": "application/json" },
          body: JSON.stringify({ message: 42 }),
        });
        expect(res.status).toBe(400);
        expect((await json(res)).error).toMatchObject({
          code: "INVALID_INPUT",
          issues: [{ path: "message" }],
        });
      });

      it("answers the orchestrator's refusals: policy 403, rate limit 429 with Retry-After", async () => {
        const auth = { ...bearer("frank"), "content-type": "application/json" };
        const post = (message: string) =>
          fetch(`${url}/chat`, {
            method: "POST",
            headers: auth,
            body: JSON.stringify({ message }),
          });
        const denied = await post("tell me the secret");
        expect(denied.status).toBe(403);
        expect((await errorOf(denied)).code).toBe("POLICY_DENIED");
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
    });

    describe("streaming", () => {
      let url: string;
      beforeAll(async () => {
        ({ url } = await serve(firstPlacement));
      });
      const post = (headers: Record<string, string>, message: string) =>
        fetch(`${url}/chat/stream`, {
          method: "POST",
          headers: { ...headers, "content-type": "application/json" },
          body: JSON.stringify({ message }),
        });

      it("streams chunks as SSE, keeping the request id header, and ends with done", async () => {
        const res = await post(bearer("dave"), "words one two three");
        expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
        const requestId = res.headers.get("x-request-id");
        expect(requestId).toMatch(UUID);
        const events = await sseEvents(res);
        expect(events.filter((e) => e.event === "message").map((e) => e.data)).toEqual([
          "words ",
          "one ",
          "two ",
          "three ",
        ]);
        expect(events.at(-1)?.event, JSON.stringify(events.at(-1))).toBe("done");
        const done = JSON.parse(events.at(-1)?.data ?? "null") as {
          requestId: string;
          result: OrchestratorResponse;
        };
        expect(done.requestId).toBe(requestId);
        expect(done.result).toMatchObject({ status: "success", text: "words one two three " });
      });

      it("ends a stream the policy refuses with an error event carrying the 403", async () => {
        const events = await sseEvents(await post(bearer("gina"), "tell me the secret"));
        expect(events.at(-1)?.event).toBe("error");
        expect(JSON.parse(events.at(-1)?.data ?? "")).toMatchObject({
          status: 403,
          error: { code: "POLICY_DENIED" },
        });
      });

      it("cancels the handler when the client disconnects mid-stream", async () => {
        const requestId = await new Promise<string>((resolve, reject) => {
          const req = http.request(`${url}/chat/stream`, {
            method: "POST",
            headers: { ...bearer("erin"), "content-type": "application/json" },
          });
          req.on("error", () => undefined);
          req.on("response", (res) => {
            let text = "";
            res.on("data", (chunk: Buffer) => {
              text += chunk.toString();
              if (!text.includes("tick")) return;
              resolve(String(res.headers["x-request-id"]));
              req.destroy();
            });
            res.on("end", () => reject(new Error(`stream ended early: ${text}`)));
          });
          req.end(JSON.stringify({ message: "ticker" }));
        });
        expect(requestId).toMatch(UUID);
        for (let i = 0; i < 100 && !aborted.includes(requestId); i++) await sleep(10);
        expect(aborted).toContain(requestId);
      });
    });
  });
}
