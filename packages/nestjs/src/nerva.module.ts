import type { IncomingMessage, ServerResponse } from "node:http";
import { ErrorCode, NervaError, type AgentRuntime } from "@nerva/core";
import { HttpBridge, getRequestScope, requestErrorOf } from "@nerva/core/http";
import {
  Inject,
  Module,
  RequestMethod,
  type DynamicModule,
  type MiddlewareConsumer,
  type NestModule,
  type OnApplicationShutdown,
  type Provider,
} from "@nestjs/common";
import { APP_FILTER, APP_INTERCEPTOR, HttpAdapterHost } from "@nestjs/core";
import {
  NERVA_BRIDGE,
  NERVA_OPTIONS,
  NERVA_ORCHESTRATOR,
  NERVA_RUNTIME,
} from "./nerva.constants.js";
import { NervaExceptionFilter } from "./nerva-exception.filter.js";
import { NervaResultInterceptor } from "./nerva-result.interceptor.js";
import { NervaMiddleware } from "./nerva.middleware.js";
import {
  splitOptions,
  type NervaModuleAsyncOptions,
  type NervaModuleOptions,
  type NervaModuleSwitches,
  type NervaOptionsFactory,
} from "./nerva.options.js";

/** Whether the module answers errors itself (its switches, fixed when the module is declared). */
const ANSWERS_ERRORS = Symbol("@nerva/nestjs:answersErrors");

const derived: Provider[] = [
  {
    provide: NERVA_BRIDGE,
    useFactory: (options: NervaModuleOptions) => new HttpBridge(splitOptions(options).http),
    inject: [NERVA_OPTIONS],
  },
  {
    provide: NERVA_ORCHESTRATOR,
    useFactory: (options: NervaModuleOptions) => splitOptions(options).orchestrator,
    inject: [NERVA_OPTIONS],
  },
  {
    provide: NERVA_RUNTIME,
    useFactory: (options: NervaModuleOptions) => splitOptions(options).runtime,
    inject: [NERVA_OPTIONS],
  },
];

const EXPORTS = [NERVA_OPTIONS, NERVA_BRIDGE, NERVA_ORCHESTRATOR, NERVA_RUNTIME];

function build(
  options: Provider[],
  switches: NervaModuleSwitches,
  imports: DynamicModule["imports"] = [],
): DynamicModule {
  const providers: Provider[] = [
    ...options,
    ...derived,
    NervaMiddleware,
    { provide: ANSWERS_ERRORS, useValue: switches.exceptionFilter !== false },
  ];
  if (switches.exceptionFilter !== false) {
    providers.push({ provide: APP_FILTER, useClass: NervaExceptionFilter });
  }
  if (switches.resultStatus !== false) {
    providers.push({ provide: APP_INTERCEPTOR, useClass: NervaResultInterceptor });
  }
  return {
    module: NervaModule,
    global: switches.global !== false,
    imports,
    providers,
    exports: EXPORTS,
  };
}

/**
 * The NestJS bridge: gives every route an ExecContext (`@NervaCtx()`), built from the `request.user`
 * your guards set, and makes the orchestrator and runtime injectable (`@InjectOrchestrator()`,
 * `@InjectRuntime()`). Works on the Express and Fastify platforms.
 *
 * @example
 * @Module({ imports: [NervaModule.forRoot({ orchestrator, runtime, requireAuth: true })], controllers: [ChatController] })
 * export class AppModule {}
 */
@Module({})
export class NervaModule implements NestModule, OnApplicationShutdown {
  /**
   * Configures the module with fixed options. Bad bridge options fail the bootstrap with
   * NervaError INVALID_OPTIONS naming the field.
   *
   * @example
   * NervaModule.forRoot({ runtime: new InProcessRuntime(), timeoutSeconds: 30 });
   */
  static forRoot(options: NervaModuleOptions & NervaModuleSwitches = {}): DynamicModule {
    const { global, exceptionFilter, resultStatus, ...rest } = options;
    splitOptions(rest);
    return build([{ provide: NERVA_OPTIONS, useValue: rest }], {
      global,
      exceptionFilter,
      resultStatus,
    });
  }

  /**
   * Configures the module from options made by a provider, as Nest's own modules do: a factory
   * with injected dependencies (`useFactory` + `inject`), a class the module instantiates
   * (`useClass`) or a provider that already exists (`useExisting`), each implementing
   * `createNervaOptions()` for the last two. Throws NervaError INVALID_OPTIONS unless exactly one
   * is given.
   *
   * @example
   * NervaModule.forRootAsync({
   *   imports: [ConfigModule],
   *   inject: [ConfigService],
   *   useFactory: (config: ConfigService) => ({ timeoutSeconds: config.get("NERVA_TIMEOUT") }),
   * });
   */
  static forRootAsync(options: NervaModuleAsyncOptions): DynamicModule {
    const given = (["useFactory", "useClass", "useExisting"] as const).filter(
      (key) => options?.[key] !== undefined,
    );
    if (given.length !== 1) {
      throw new NervaError(
        ErrorCode.INVALID_OPTIONS,
        `Invalid options: NervaModule.forRootAsync needs exactly one of useFactory, useClass or useExisting (got ${given.length === 0 ? "none" : given.join(", ")}).`,
        {
          issues: [
            { path: "options", message: "exactly one of useFactory, useClass, useExisting" },
          ],
        },
      );
    }
    const fromFactory = (factory: NervaOptionsFactory) => factory.createNervaOptions();
    const providers: Provider[] =
      options.useFactory !== undefined
        ? [
            {
              provide: NERVA_OPTIONS,
              useFactory: options.useFactory as (...args: unknown[]) => unknown,
              inject: options.inject ?? [],
            },
          ]
        : options.useClass !== undefined
          ? [
              { provide: options.useClass, useClass: options.useClass },
              { provide: NERVA_OPTIONS, useFactory: fromFactory, inject: [options.useClass] },
            ]
          : [
              {
                provide: NERVA_OPTIONS,
                useFactory: fromFactory,
                inject: [options.useExisting as NonNullable<typeof options.useExisting>],
              },
            ];
    return build(providers, options, options.imports ?? []);
  }

  constructor(
    @Inject(HttpAdapterHost) private readonly adapterHost: HttpAdapterHost,
    @Inject(NervaMiddleware) private readonly middleware: NervaMiddleware,
    @Inject(ANSWERS_ERRORS) private readonly answersErrors: boolean = true,
    @Inject(NERVA_ORCHESTRATOR) private readonly orchestrator: object | null = null,
    @Inject(NERVA_RUNTIME) private readonly runtime: AgentRuntime | null = null,
  ) {}

  /**
   * On `app.close()`: closes the orchestrator and the runtime given in the options (and so their
   * runtime's processes, MCP servers, memory and registry stores), so nothing keeps Node alive
   * after the app, e.g. at the end of an e2e test.
   */
  async onApplicationShutdown(): Promise<void> {
    const closing: Promise<unknown>[] = [];
    for (const owned of [this.orchestrator, this.runtime]) {
      const close = (owned as { close?: unknown } | null)?.close;
      if (typeof close === "function") closing.push(Promise.resolve(close.call(owned)));
    }
    await Promise.all(closing);
  }

  /**
   * Starts each request's scope before guards run. On the Express and Fastify platforms this is
   * a plain `app.use()` / `onRequest` hook on the underlying server (no per-request route
   * matching); on other platforms, a Nest middleware for every route.
   */
  configure(consumer: MiddlewareConsumer): void {
    const adapter = this.adapterHost.httpAdapter as HttpAdapterHost["httpAdapter"] | undefined;
    const middleware = this.middleware;
    switch (adapter?.getType()) {
      case "express": {
        const express = adapter.getInstance<{
          use(fn: (req: IncomingMessage, res: ServerResponse, next: () => void) => void): void;
          use(
            fn: (
              err: unknown,
              req: IncomingMessage,
              res: ServerResponse,
              next: (err: unknown) => void,
            ) => void,
          ): void;
        }>();
        express.use((req: IncomingMessage, res: ServerResponse, next: () => void) => {
          middleware.start(req, res, true);
          next();
        });
        if (this.answersErrors) {
          // Nest's body parser runs before any module's middleware: a body it refuses skips the
          // one above. Start the request's scope here (its id goes into the answer), and give
          // the parser's error its fixed client message before Nest wraps it in an exception
          // carrying the parser's own message.
          express.use(
            (
              err: unknown,
              req: IncomingMessage,
              res: ServerResponse,
              next: (e: unknown) => void,
            ) => {
              if (getRequestScope(req) === undefined) middleware.start(req, res, true);
              next(requestErrorOf(err));
            },
          );
        }
        return;
      }
      case "fastify":
        adapter
          .getInstance<{
            addHook(
              name: "onRequest",
              hook: (
                request: { raw: IncomingMessage },
                reply: { raw: ServerResponse },
                done: () => void,
              ) => void,
            ): void;
          }>()
          .addHook("onRequest", (request, reply, done) => {
            middleware.start(request.raw, reply.raw, false);
            done();
          });
        return;
      default:
        consumer.apply(NervaMiddleware).forRoutes({ path: "{*path}", method: RequestMethod.ALL });
    }
  }
}

/**
 * Injects the orchestrator given to `NervaModule` (`NERVA_ORCHESTRATOR`).
 *
 * @example
 * constructor(@InjectOrchestrator() private readonly orchestrator: Orchestrator) {}
 */
export const InjectOrchestrator = (): PropertyDecorator & ParameterDecorator =>
  Inject(NERVA_ORCHESTRATOR);

/**
 * Injects the runtime given to `NervaModule` (`NERVA_RUNTIME`).
 *
 * @example
 * constructor(@InjectRuntime() private readonly runtime: AgentRuntime) {}
 */
export const InjectRuntime = (): PropertyDecorator & ParameterDecorator => Inject(NERVA_RUNTIME);
