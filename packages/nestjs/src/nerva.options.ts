import { ErrorCode, NervaError, type AgentRuntime, type Orchestrator } from "@nerva/core";
import type { HttpRequestLike, NervaHttpOptions } from "@nerva/core/http";
import type { FactoryProvider, InjectionToken, ModuleMetadata, Type } from "@nestjs/common";

/**
 * What `NervaModule` makes injectable, plus the shared bridge options (`resolve` receives the
 * platform request: Express's `req` or Fastify's `request`, with the `user` your guards set).
 *
 * @example
 * NervaModule.forRoot({ orchestrator, runtime, requireAuth: true });
 */
export interface NervaModuleOptions<
  TOrchestrator extends object = Orchestrator,
> extends NervaHttpOptions<HttpRequestLike & Record<string, unknown>> {
  /** Injectable with `@InjectOrchestrator()` / `NERVA_ORCHESTRATOR`. */
  orchestrator?: TOrchestrator | null;
  /** Injectable with `@InjectRuntime()` / `NERVA_RUNTIME`. */
  runtime?: AgentRuntime | null;
}

/**
 * Module-level switches, fixed when the module is declared (not produced by a factory).
 *
 * @example
 * NervaModule.forRoot({ orchestrator, global: false, exceptionFilter: false });
 */
export interface NervaModuleSwitches {
  /** Register the module globally (its providers injectable everywhere). Default `true`. */
  global?: boolean;
  /** Install the global filter answering NervaErrors with their HTTP status. Default `true`. */
  exceptionFilter?: boolean;
  /**
   * Install the global interceptor giving routes that return an agent's answer its HTTP status
   * (200, 502, 504, 422 as `httpStatusOfResult`), not Nest's 201 for every POST. Default `true`.
   */
  resultStatus?: boolean;
}

/**
 * A provider that makes the module's options, for `forRootAsync({ useClass })` or
 * `forRootAsync({ useExisting })`.
 *
 * @example
 * @Injectable()
 * class NervaConfig implements NervaOptionsFactory {
 *   constructor(private readonly agents: AgentsService) {}
 *   createNervaOptions() { return { orchestrator: this.agents.orchestrator, requireAuth: true }; }
 * }
 */
export interface NervaOptionsFactory {
  createNervaOptions(): NervaModuleOptions | Promise<NervaModuleOptions>;
}

/**
 * Options of `NervaModule.forRootAsync()`: where {@link NervaModuleOptions} come from, as Nest's
 * own modules take them — exactly one of `useFactory` (with `inject`), `useClass` (a
 * {@link NervaOptionsFactory} the module instantiates) or `useExisting` (one already provided,
 * e.g. by an imported module).
 *
 * @example
 * NervaModule.forRootAsync({
 *   imports: [AgentsModule],
 *   inject: [AgentsService],
 *   useFactory: (agents: AgentsService) => ({ orchestrator: agents.orchestrator, requireAuth: true }),
 * });
 * NervaModule.forRootAsync({ imports: [AgentsModule], useClass: NervaConfig });
 */
export interface NervaModuleAsyncOptions extends NervaModuleSwitches {
  imports?: ModuleMetadata["imports"];
  /** Providers `useFactory` receives, in order. */
  inject?: FactoryProvider["inject"];
  useFactory?: (...args: never[]) => NervaModuleOptions | Promise<NervaModuleOptions>;
  useClass?: Type<NervaOptionsFactory>;
  useExisting?: InjectionToken<NervaOptionsFactory>;
}

/** Splits the module's own keys from the bridge options, checking them. */
export function splitOptions(options: NervaModuleOptions): {
  orchestrator: object | null;
  runtime: AgentRuntime | null;
  http: NervaHttpOptions<HttpRequestLike>;
} {
  if (typeof options !== "object" || options === null) {
    throw new NervaError(
      ErrorCode.INVALID_OPTIONS,
      "Invalid options: NervaModule needs an options object (or forRootAsync's useFactory must return one).",
      { issues: [{ path: "options", message: "must be an object" }] },
    );
  }
  const { orchestrator = null, runtime = null, ...http } = options;
  if (orchestrator !== null && typeof orchestrator !== "object") {
    throw new NervaError(
      ErrorCode.INVALID_OPTIONS,
      "Invalid options.orchestrator: must be an Orchestrator instance (or omitted).",
      { issues: [{ path: "options.orchestrator", message: "must be an object" }] },
    );
  }
  if (runtime !== null && typeof (runtime as { invoke?: unknown }).invoke !== "function") {
    throw new NervaError(
      ErrorCode.INVALID_OPTIONS,
      "Invalid options.runtime: must be an AgentRuntime (e.g. new InProcessRuntime()) or omitted.",
      { issues: [{ path: "options.runtime", message: "must have an invoke() method" }] },
    );
  }
  return { orchestrator, runtime, http: http as NervaHttpOptions<HttpRequestLike> };
}
