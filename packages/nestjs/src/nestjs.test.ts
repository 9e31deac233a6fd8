import "reflect-metadata";
import type { AddressInfo } from "node:net";
import type { AgentRuntime, ExecContext, Orchestrator } from "@nerva/core";
import { jsonBodyOf, type JsonBodyRequest } from "@nerva/core/http";
import {
  BRIDGE_CONTRACT_JWT_SECRET,
  createBridgeContractRoutes,
  describeBridgeContract,
  mintBridgeContractToken,
  readSSEEvents,
  type BridgeContractRoutes,
  type BridgeContractServer,
  type BridgeContractSetup,
  type SSEEvent,
} from "@nerva/core/testing";
import {
  Controller,
  Get,
  Inject,
  Injectable,
  Module,
  Param,
  Post,
  RequestMethod,
  Req,
  Res,
  Sse,
  UseGuards,
  type DynamicModule,
  type MiddlewareConsumer,
  type NestModule,
  type ExecutionContext,
  type INestApplication,
} from "@nestjs/common";
import { AuthGuard, PassportModule, PassportStrategy } from "@nestjs/passport";
import { ExpressAdapter } from "@nestjs/platform-express";
import { FastifyAdapter } from "@nestjs/platform-fastify";
import { Test } from "@nestjs/testing";
import { ExtractJwt, Strategy } from "passport-jwt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  InjectOrchestrator,
  InjectRuntime,
  NERVA_BRIDGE,
  NervaCtx,
  NervaModule,
  sendSSE,
  type NervaOptionsFactory,
  toSSEObservable,
} from "./index.js";

const ROUTES = Symbol("ROUTES");
const JWT_SECRET = Symbol("JWT_SECRET");

/** @nestjs/passport + passport-jwt: the guard sets request.user to what validate() returns. */
@Injectable()
class JwtStrategy extends PassportStrategy(Strategy) {
  constructor(@Inject(JWT_SECRET) secret: string) {
    super({
      jwtFromRequest: ExtractJwt.fromAuthHeaderAsBearerToken(),
      secretOrKey: secret,
      algorithms: ["HS256"],
    });
  }
  validate(payload: { sub: string; roles?: string[]; sid?: string }) {
    return { id: payload.sub, roles: payload.roles ?? [], sessionId: payload.sid };
  }
}

/**
 * Passport's JWT guard for requests that carry a token (a bad one is its 401); requests without
 * one go on anonymous, as with the Express and Fastify tests' auth, so `requireAuth` decides.
 */
@Injectable()
class JwtIfPresentGuard extends AuthGuard("jwt") {
  override canActivate(context: ExecutionContext) {
    const request = context.switchToHttp().getRequest<{ headers: Record<string, unknown> }>();
    return request.headers.authorization === undefined ? true : super.canActivate(context);
  }
}

/** Errors `toSSEObservable` reported through its `onError` option. */
const reported: { error: unknown; requestId: string | null }[] = [];

/** The contract's routes as a Nest controller; `guarded`: the app's auth guards them. */
function controllerFor(guarded: boolean) {
  const guards = guarded ? [JwtIfPresentGuard] : [];

  @Controller()
  class ChatController {
    constructor(
      @InjectRuntime() private readonly runtime: AgentRuntime,
      @InjectOrchestrator() private readonly orchestrator: Orchestrator,
      @Inject(ROUTES) private readonly routes: BridgeContractRoutes,
    ) {}

    @Get("whoami")
    @UseGuards(...guards)
    whoami(@NervaCtx() ctx: ExecContext, @NervaCtx() again: ExecContext) {
      return {
        ...this.routes.whoami(ctx, again),
        injected:
          this.orchestrator === this.routes.orchestrator && this.runtime === this.routes.runtime,
      };
    }

    @Post("chat")
    @UseGuards(...guards)
    async chat(
      @Req() request: JsonBodyRequest,
      @NervaCtx() ctx: ExecContext,
      @Res({ passthrough: true })
      res: { status?: (n: number) => unknown; code?: (n: number) => unknown },
    ) {
      const answer = await this.routes.chat(jsonBodyOf(request).message, ctx);
      if (typeof res.code === "function") res.code(answer.status);
      else res.status?.(answer.status);
      return answer.body;
    }

    @Post("chat/stream")
    @UseGuards(...guards)
    stream(@Req() request: JsonBodyRequest, @NervaCtx() ctx: ExecContext, @Res() res: unknown) {
      return sendSSE(res, this.routes.stream(jsonBodyOf(request).message, ctx), ctx);
    }

    /** The same stream through Nest's own @Sse(). */
    @Sse("chat/observable", { method: RequestMethod.POST })
    @UseGuards(...guards)
    observable(@Req() request: JsonBodyRequest, @NervaCtx() ctx: ExecContext) {
      return toSSEObservable(this.routes.stream(jsonBodyOf(request).message, ctx), ctx);
    }

    @Sse("boom/stream")
    boom(@NervaCtx() ctx: ExecContext) {
      return toSSEObservable(
        (async function* () {
          yield "partial";
          throw new Error("database exploded");
        })(),
        ctx,
        { onError: (error) => reported.push({ error, requestId: ctx.requestId }) },
      );
    }

    @Get("fail/:code")
    fail(@Param("code") code: string) {
      throw this.routes.failure(code);
    }

    @Get("crash")
    crash() {
      throw this.routes.crash("route");
    }
  }
  return ChatController;
}

type Platform = "express" | "fastify";

async function startNest(
  platform: Platform,
  nerva: () => DynamicModule,
  { routes, jwtSecret = BRIDGE_CONTRACT_JWT_SECRET, guarded = true }: StartOptions,
): Promise<{ url: string; app: INestApplication }> {
  @Module({
    imports: [PassportModule, nerva()],
    controllers: [controllerFor(guarded)],
    providers: [
      JwtStrategy,
      { provide: ROUTES, useValue: routes },
      { provide: JWT_SECRET, useValue: jwtSecret },
    ],
  })
  class AppModule implements NestModule {
    constructor(@Inject(ROUTES) private readonly contractRoutes: BridgeContractRoutes) {}

    /** The app's own middleware, after the bridge's: throws for `x-contract-crash: middleware`. */
    configure(consumer: MiddlewareConsumer) {
      const crash = () => this.contractRoutes.crash("middleware");
      consumer
        .apply((req: { headers: Record<string, unknown> }, _res: unknown, next: () => void) => {
          if (req.headers["x-contract-crash"] === "middleware") throw crash();
          next();
        })
        .forRoutes({ path: "{*path}", method: RequestMethod.ALL });
    }
  }
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
  const app = moduleRef.createNestApplication(
    platform === "express" ? new ExpressAdapter() : new FastifyAdapter(),
    { logger: false },
  );
  await app.listen(0, "127.0.0.1");
  const port = (app.getHttpServer().address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}`, app };
}
interface StartOptions {
  routes: BridgeContractRoutes;
  jwtSecret?: string;
  guarded?: boolean;
}

/** The contract's server: the app's auth is the guard, or nothing when `auth` is null. */
const startFor =
  (platform: Platform) =>
  async ({
    auth,
    options,
    jwtSecret,
    routes,
  }: BridgeContractSetup): Promise<BridgeContractServer> => {
    const { url, app } = await startNest(
      platform,
      () =>
        NervaModule.forRoot({
          runtime: routes.runtime,
          orchestrator: routes.orchestrator,
          ...options,
        }),
      { routes, jwtSecret, guarded: auth === "guard" },
    );
    return { url, close: () => app.close() };
  };

const json = async (res: Response) => (await res.json()) as Record<string, unknown>;
const bearer = (sub: string) => ({ authorization: `Bearer ${mintBridgeContractToken(sub)}` });

for (const platform of ["express", "fastify"] as const) {
  describeBridgeContract(`@nerva/nestjs on the ${platform} platform`, startFor(platform), {
    authPlacements: ["guard"],
    streamPaths: ["/chat/stream", "/chat/observable"],
  });

  describe(`@nerva/nestjs on the ${platform} platform, Nest only`, () => {
    const routes = createBridgeContractRoutes();
    let app: INestApplication;
    let url: string;
    beforeAll(async () => {
      ({ url, app } = await startNest(
        platform,
        () =>
          NervaModule.forRoot({
            runtime: routes.runtime,
            orchestrator: routes.orchestrator,
            onError: () => undefined,
          }),
        { routes },
      ));
    });
    afterAll(async () => {
      await app?.close();
      await routes.close();
    });

    it("injects the runtime and orchestrator NervaModule was given", async () => {
      const res = await fetch(`${url}/whoami`, { headers: bearer("alice") });
      expect(res.status).toBe(200);
      expect(await json(res)).toMatchObject({ userId: "alice", injected: true });
    });

    it("returns the request id even when a guard rejects", async () => {
      const res = await fetch(`${url}/whoami`, { headers: { authorization: "Bearer not.a.jwt" } });
      expect(res.status).toBe(401);
      expect(res.headers.get("x-request-id")).toMatch(/[0-9a-f-]{36}/);
    });

    it("ends a failing @Sse() stream with an error event and reports it to onError", async () => {
      const boom = await fetch(`${url}/boom/stream`);
      const requestId = boom.headers.get("x-request-id");
      const events: SSEEvent[] = [];
      for await (const e of readSSEEvents(boom.body as AsyncIterable<Uint8Array>)) events.push(e);
      expect(events.map((e) => e.event)).toEqual(["message", "error"]);
      expect(events[1]?.data).not.toContain("database");
      const report = reported.find((r) => r.requestId === requestId);
      expect((report?.error as Error | undefined)?.message).toBe("database exploded");
    });
  });
}

describe("NervaModule.forRootAsync", () => {
  const routes = createBridgeContractRoutes();
  const apps: INestApplication[] = [];
  afterAll(async () => {
    for (const app of apps) await app.close();
    await routes.close();
  });

  it("builds the options from injected providers", async () => {
    @Injectable()
    class Settings {
      readonly trustRequestId = true;
    }
    @Module({ providers: [Settings], exports: [Settings] })
    class SettingsModule {}

    const { url, app } = await startNest(
      "express",
      () =>
        NervaModule.forRootAsync({
          imports: [SettingsModule],
          inject: [Settings],
          useFactory: (settings: Settings) => ({
            runtime: routes.runtime,
            orchestrator: routes.orchestrator,
            trustRequestId: settings.trustRequestId,
          }),
        }),
      { routes },
    );
    apps.push(app);
    const res = await fetch(`${url}/whoami`, {
      headers: { ...bearer("erin"), "x-request-id": "from-gateway" },
    });
    expect(await json(res)).toMatchObject({
      userId: "erin",
      requestId: "from-gateway",
      injected: true,
    });
    expect(app.get(NERVA_BRIDGE).options.trustRequestId).toBe(true);
  });

  it.each(["useClass", "useExisting"] as const)(
    "builds the options with %s, as Nest modules do",
    async (style) => {
      @Injectable()
      class Settings {
        readonly trustRequestId = true;
      }
      @Injectable()
      class NervaConfig implements NervaOptionsFactory {
        constructor(@Inject(Settings) private readonly settings: Settings) {}
        createNervaOptions() {
          return {
            runtime: routes.runtime,
            orchestrator: routes.orchestrator,
            trustRequestId: this.settings.trustRequestId,
          };
        }
      }
      @Module({ providers: [Settings, NervaConfig], exports: [NervaConfig] })
      class ConfigModule {}
      @Module({ providers: [Settings], exports: [Settings] })
      class SettingsModule {}

      const { url, app } = await startNest(
        "fastify",
        () =>
          style === "useClass"
            ? NervaModule.forRootAsync({ imports: [SettingsModule], useClass: NervaConfig })
            : NervaModule.forRootAsync({ imports: [ConfigModule], useExisting: NervaConfig }),
        { routes },
      );
      apps.push(app);
      const res = await fetch(`${url}/whoami`, {
        headers: { ...bearer("fred"), "x-request-id": "from-gateway" },
      });
      expect(await json(res)).toMatchObject({
        userId: "fred",
        requestId: "from-gateway",
        injected: true,
      });
    },
  );

  it("refuses anything but exactly one of useFactory, useClass, useExisting", () => {
    class Config implements NervaOptionsFactory {
      createNervaOptions() {
        return {};
      }
    }
    expect(() => NervaModule.forRootAsync({} as never)).toThrow(/exactly one .*got none/);
    expect(() => NervaModule.forRootAsync({ useClass: Config, useExisting: Config })).toThrow(
      /got useClass, useExisting/,
    );
  });

  it("fails the bootstrap on bad options, naming the field", async () => {
    await expect(
      startNest(
        "express",
        () => NervaModule.forRootAsync({ useFactory: () => ({ timeoutSeconds: -5 }) }),
        { routes },
      ),
    ).rejects.toThrow(/options\.timeoutSeconds/);
    expect(() => NervaModule.forRoot({ runtime: {} as never })).toThrow(/options\.runtime/);
  });
});
