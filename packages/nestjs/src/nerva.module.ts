import type { IncomingMessage, ServerResponse } from "node:http";
import { createHttpBridge } from "@nerva/core/http";
import {
  Inject,
  Module,
  RequestMethod,
  type DynamicModule,
  type MiddlewareConsumer,
  type NestModule,
  type Provider,
} from "@nestjs/common";
import { APP_FILTER, HttpAdapterHost } from "@nestjs/core";
import {
  NERVA_BRIDGE,
  NERVA_OPTIONS,
  NERVA_ORCHESTRATOR,
  NERVA_RUNTIME,
} from "./nerva.constants.js";
import { NervaExceptionFilter } from "./nerva-exception.filter.js";
import { NervaMiddleware } from "./nerva.middleware.js";
import {
  splitOptions,
  type NervaModuleAsyncOptions,
  type NervaModuleOptions,
  type NervaModuleSwitches,
} from "./nerva.options.js";

const derived: Provider[] = [
  {
    provide: NERVA_BRIDGE,
    useFactory: (options: NervaModuleOptions) => createHttpBridge(splitOptions(options).http),
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
  options: Provider,
  switches: NervaModuleSwitches,
  imports: DynamicModule["imports"] = [],
): DynamicModule {
  const providers: Provider[] = [options, ...derived, NervaMiddleware];
  if (switches.exceptionFilter !== false) {
    providers.push({ provide: APP_FILTER, useClass: NervaExceptionFilter });
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
export class NervaModule implements NestModule {
  /**
   * Configures the module with fixed options. Bad bridge options fail the bootstrap with
   * NervaError INVALID_OPTIONS naming the field.
   *
   * @example
   * NervaModule.forRoot({ runtime: new InProcessRuntime(), timeoutSeconds: 30 });
   */
  static forRoot(options: NervaModuleOptions & NervaModuleSwitches = {}): DynamicModule {
    const { global, exceptionFilter, ...rest } = options;
    splitOptions(rest);
    return build({ provide: NERVA_OPTIONS, useValue: rest }, { global, exceptionFilter });
  }

  /**
   * Configures the module from a factory with injected dependencies (config, your agents).
   *
   * @example
   * NervaModule.forRootAsync({
   *   imports: [ConfigModule],
   *   inject: [ConfigService],
   *   useFactory: (config: ConfigService) => ({ timeoutSeconds: config.get("NERVA_TIMEOUT") }),
   * });
   */
  static forRootAsync(options: NervaModuleAsyncOptions): DynamicModule {
    return build(
      {
        provide: NERVA_OPTIONS,
        useFactory: options.useFactory as (...args: unknown[]) => unknown,
        inject: options.inject ?? [],
      },
      options,
      options.imports ?? [],
    );
  }

  constructor(
    @Inject(HttpAdapterHost) private readonly adapterHost: HttpAdapterHost,
    @Inject(NervaMiddleware) private readonly middleware: NervaMiddleware,
  ) {}

  /**
   * Starts each request's scope before guards run. On the Express and Fastify platforms this is
   * a plain `app.use()` / `onRequest` hook on the underlying server (no per-request route
   * matching); on other platforms, a Nest middleware for every route.
   */
  configure(consumer: MiddlewareConsumer): void {
    const adapter = this.adapterHost.httpAdapter as HttpAdapterHost["httpAdapter"] | undefined;
    const middleware = this.middleware;
    switch (adapter?.getType()) {
      case "express":
        adapter
          .getInstance<{
            use(fn: (req: IncomingMessage, res: ServerResponse, next: () => void) => void): void;
          }>()
          .use((req, res, next) => {
            middleware.start(req, res, true);
            next();
          });
        return;
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
