import "reflect-metadata";
import http from "node:http";
import type { AddressInfo } from "node:net";
import {
  DeclarativePolicyEngine,
  ErrorCode,
  ExecContext,
  InProcessRuntime,
  NervaError,
  Orchestrator,
  RuleRouter,
  type OrchestratorResponse,
  type AgentRuntime,
} from "@nerva/core";
import { httpStatusOfResult, readSseEvents, type SseEvent } from "@nerva/core/http";
import {
  Body,
  Controller,
  Get,
  Injectable,
  Module,
  Param,
  Post,
  Query,
  Res,
  Sse,
  UseGuards,
  type INestApplication,
} from "@nestjs/common";
import { AuthGuard, PassportModule, PassportStrategy } from "@nestjs/passport";
import { ExpressAdapter } from "@nestjs/platform-express";
import { FastifyAdapter } from "@nestjs/platform-fastify";
import { Test } from "@nestjs/testing";
import { SignJWT } from "jose";
import { ExtractJwt, Strategy } from "passport-jwt";
import { afterAll, describe, expect, it } from "vitest";
import {
  InjectOrchestrator,
  InjectRuntime,
  NERVA_BRIDGE,
  NervaCtx,
  NervaModule,
  toSseObservable,
  type NervaModuleOptions,
} from "./index.js";

const secretText = "nestjs-bridge-test-secret-0123456789";
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

/** @nestjs/passport + passport-jwt: the guard sets request.user to what validate() returns. */
@Injectable()
class JwtStrategy extends PassportStrategy(Strategy) {
  constructor() {
    super({
      jwtFromRequest: ExtractJwt.fromAuthHeaderAsBearerToken(),
      secretOrKey: secretText,
      algorithms: ["HS256"],
    });
  }
  validate(payload: { sub: string; roles?: string[]; sid?: string }) {
    return { id: payload.sub, roles: payload.roles ?? [], sessionId: payload.sid };
  }
}

const describeCtx = (ctx: ExecContext) => ({
  userId: ctx.userId,
  sessionId: ctx.sessionId,
  roles: ctx.permissions.roles,
  requestId: ctx.requestId,
  traceId: ctx.traceId,
});

@Controller()
class ChatController {
  constructor(
    @InjectRuntime() private readonly runtime: AgentRuntime,
    @InjectOrchestrator() private readonly orchestrator: Orchestrator,
  ) {}

  @Get("whoami")
  @UseGuards(AuthGuard("jwt"))
  whoami(@NervaCtx() ctx: ExecContext, @NervaCtx() again: ExecContext) {
    return {
      ...describeCtx(ctx),
      same: ctx === again,
      injected: this.orchestrator === orchestrator && this.runtime === runtime,
    };
  }

  @Get("open/whoami")
  open(@NervaCtx() ctx: ExecContext) {
    return describeCtx(ctx);
  }

  @Post("chat")
  @UseGuards(AuthGuard("jwt"))
  async chat(
    @Body() body: { message: unknown },
    @NervaCtx() ctx: ExecContext,
    @Res({ passthrough: true })
    res: { status?: (n: number) => unknown; code?: (n: number) => unknown },
  ) {
    const response = await this.orchestrator.handle(body.message as string, ctx);
    const status = httpStatusOfResult(response);
    if (typeof res.code === "function") res.code(status);
    else res.status?.(status);
    return { response, userId: ctx.userId, requestId: ctx.requestId };
  }

  @Sse("chat/stream")
  @UseGuards(AuthGuard("jwt"))
  stream(@Query("message") message: string, @NervaCtx() ctx: ExecContext) {
    return toSseObservable(this.orchestrator.stream(message, ctx), ctx);
  }

  @Sse("boom/stream")
  boom(@NervaCtx() ctx: ExecContext) {
    return toSseObservable(
      (async function* () {
        yield "partial";
        throw new Error("database exploded");
      })(),
      ctx,
      { onError: (error) => reported.push({ error, requestId: ctx.requestId }) },
    );
  }

  @Get("fail/:code")
  fail(@Param("code") code: ErrorCode) {
    throw new NervaError(code, `failed with ${code}`, {
      details: { retryAfterSeconds: 7 },
    });
  }
}

type Platform = "express" | "fastify";
const apps: INestApplication[] = [];

async function start(
  platform: Platform,
  nerva: () => ReturnType<typeof NervaModule.forRoot>,
): Promise<{ url: string; app: INestApplication }> {
  @Module({
    imports: [PassportModule, nerva()],
    controllers: [ChatController],
    providers: [JwtStrategy],
  })
  class AppModule {}
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
  const app = moduleRef.createNestApplication(
    platform === "express" ? new ExpressAdapter() : new FastifyAdapter(),
    { logger: false },
  );
  apps.push(app);
  await app.listen(0, "127.0.0.1");
  const port = (app.getHttpServer().address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}`, app };
}

const forRoot =
  (options: NervaModuleOptions = {}) =>
  () =>
    NervaModule.forRoot({
      runtime,
      orchestrator,
      onError: (error, requestId) => reported.push({ error, requestId }),
      ...options,
    });
const reported: { error: unknown; requestId: string | null }[] = [];

afterAll(async () => {
  for (const app of apps) await app.close();
  await runtime.close();
});

const json = async (res: Response) => (await res.json()) as Record<string, unknown>;

describe.each(["express", "fastify"] as const)("@nerva/nestjs on the %s platform", (platform) => {
  let url: string;
  it("starts a real server on port 0", async () => {
    ({ url } = await start(platform, forRoot()));
    expect(url).toMatch(/:\d+$/);
  });

  it("resolves @NervaCtx() from the user the passport-jwt guard set", async () => {
    const res = await fetch(`${url}/whoami`, {
      headers: await bearer("alice", { roles: ["admin"], sid: "s-1" }),
    });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body).toMatchObject({
      userId: "alice",
      sessionId: "s-1",
      roles: ["admin"],
      same: true,
      injected: true,
    });
    expect(res.headers.get("x-request-id")).toBe(body.requestId);
  });

  it("keeps 200 concurrent users apart", async () => {
    const users = Array.from({ length: 200 }, (_, i) => `user-${platform}-${i}`);
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

  it("returns the request id even when a guard rejects", async () => {
    const res = await fetch(`${url}/whoami`);
    expect(res.status).toBe(401);
    expect(res.headers.get("x-request-id")).toMatch(/[0-9a-f-]{36}/);
  });

  it("ignores identity headers, bearer tokens and client request ids by default", async () => {
    const token = await mint("alice");
    const res = await fetch(`${url}/open/whoami`, {
      headers: { authorization: `Bearer ${token}`, "x-user-id": "mallory", "x-request-id": "mine" },
    });
    const body = await json(res);
    expect(body.userId).toBeNull();
    expect(body.requestId).not.toBe("mine");
  });

  it("joins the caller's trace", async () => {
    const traceId = "0af7651916cd43dd8448eb211c80319c";
    const body = await json(
      await fetch(`${url}/open/whoami`, {
        headers: { traceparent: `00-${traceId}-b7ad6b7169203331-01` },
      }),
    );
    expect(body.traceId).toBe(traceId);
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
  ])("maps %s to %i", async (code, status) => {
    const res = await fetch(`${url}/fail/${code}`);
    expect(res.status).toBe(status);
    const body = await json(res);
    expect((body.error as { requestId: string }).requestId).toBe(res.headers.get("x-request-id"));
    if (status === 429 || status === 503) expect(res.headers.get("retry-after")).toBe("7");
  });

  it("answers the orchestrator's refusals: policy 403, rate limit 429 with Retry-After", async () => {
    const auth = { ...(await bearer(`frank-${platform}`)), "content-type": "application/json" };
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

  it("streams with @Sse() and ends with a done event", async () => {
    const res = await fetch(`${url}/chat/stream?message=words%20one%20two%20three`, {
      headers: await bearer("dave"),
    });
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const requestId = res.headers.get("x-request-id");
    const events: SseEvent[] = [];
    for await (const e of readSseEvents(res.body as AsyncIterable<Uint8Array>)) events.push(e);
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

  it("ends a stream with an error event: the policy's 403, or a reported 500", async () => {
    const denied = await fetch(`${url}/chat/stream?message=secret`, {
      headers: await bearer("gina"),
    });
    const events: SseEvent[] = [];
    for await (const e of readSseEvents(denied.body as AsyncIterable<Uint8Array>)) events.push(e);
    expect(events.at(-1)?.event).toBe("error");
    expect(JSON.parse(events.at(-1)?.data ?? "")).toMatchObject({
      status: 403,
      error: { code: "POLICY_DENIED" },
    });

    const boom = await fetch(`${url}/boom/stream`);
    const requestId = boom.headers.get("x-request-id");
    const boomEvents: SseEvent[] = [];
    for await (const e of readSseEvents(boom.body as AsyncIterable<Uint8Array>)) boomEvents.push(e);
    expect(boomEvents.map((e) => e.event)).toEqual(["message", "error"]);
    expect(boomEvents[1]?.data).not.toContain("database");
    const report = reported.find((r) => r.requestId === requestId);
    expect((report?.error as Error | undefined)?.message).toBe("database exploded");
  });

  it("cancels the handler when the client disconnects mid-stream", async () => {
    const auth = await bearer("erin");
    const requestId = await new Promise<string>((resolve, reject) => {
      const req = http.get(`${url}/chat/stream?message=ticker`, { headers: auth });
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
    });
    for (let i = 0; i < 100 && !seen.aborted.includes(requestId); i++) await sleep(10);
    expect(seen.aborted).toContain(requestId);
  });

  it("answers 401 with requireAuth when no guard set a user", async () => {
    const strict = await start(platform, forRoot({ requireAuth: true }));
    const res = await fetch(`${strict.url}/open/whoami`);
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe("Bearer");
    expect(((await json(res)).error as { code: string }).code).toBe("UNAUTHENTICATED");
    const ok = await fetch(`${strict.url}/whoami`, { headers: await bearer("bob") });
    expect(((await json(ok)) as { userId: string }).userId).toBe("bob");
  });

  it("answers 500 when resolve throws, never an anonymous context", async () => {
    const failing = await start(
      platform,
      forRoot({
        resolve: () => {
          throw new Error("user service down");
        },
      }),
    );
    const res = await fetch(`${failing.url}/open/whoami`);
    expect(res.status).toBe(500);
    expect(await res.text()).not.toContain("user service down");
  });
});

describe("NervaModule.forRootAsync", () => {
  it("builds the options from injected providers", async () => {
    @Injectable()
    class Settings {
      readonly trustRequestId = true;
    }
    @Module({ providers: [Settings], exports: [Settings] })
    class SettingsModule {}

    const { url, app } = await start("express", () =>
      NervaModule.forRootAsync({
        imports: [SettingsModule],
        inject: [Settings],
        useFactory: (settings: Settings) => ({
          runtime,
          orchestrator,
          trustRequestId: settings.trustRequestId,
        }),
      }),
    );
    const res = await fetch(`${url}/whoami`, {
      headers: { ...(await bearer("erin")), "x-request-id": "from-gateway" },
    });
    expect(await json(res)).toMatchObject({
      userId: "erin",
      requestId: "from-gateway",
      injected: true,
    });
    expect(app.get(NERVA_BRIDGE).options.trustRequestId).toBe(true);
  });

  it("fails the bootstrap on bad options, naming the field", async () => {
    await expect(
      start("express", () =>
        NervaModule.forRootAsync({ useFactory: () => ({ timeoutSeconds: -5 }) }),
      ),
    ).rejects.toThrow(/options\.timeoutSeconds/);
    expect(() => NervaModule.forRoot({ runtime: {} as never })).toThrow(/options\.runtime/);
  });
});
