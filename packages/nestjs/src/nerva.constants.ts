/**
 * Injection token of the options given to `NervaModule.forRoot()` / `forRootAsync()`.
 *
 * @example
 * constructor(@Inject(NERVA_OPTIONS) private readonly options: NervaModuleOptions) {}
 */
export const NERVA_OPTIONS: unique symbol = Symbol.for("@nerva/nestjs:options") as never;

/**
 * Injection token of the orchestrator given as `orchestrator` (`null` when none was given).
 *
 * @example
 * constructor(@Inject(NERVA_ORCHESTRATOR) private readonly orchestrator: Orchestrator) {}
 */
export const NERVA_ORCHESTRATOR: unique symbol = Symbol.for("@nerva/nestjs:orchestrator") as never;

/**
 * Injection token of the runtime given as `runtime` (`null` when none was given).
 *
 * @example
 * constructor(@Inject(NERVA_RUNTIME) private readonly runtime: AgentRuntime) {}
 */
export const NERVA_RUNTIME: unique symbol = Symbol.for("@nerva/nestjs:runtime") as never;

/**
 * Injection token of the module's `HttpBridge` (from `@nerva/core/http`), which turns requests
 * into ExecContexts.
 *
 * @example
 * constructor(@Inject(NERVA_BRIDGE) private readonly bridge: HttpBridge) {}
 */
export const NERVA_BRIDGE: unique symbol = Symbol.for("@nerva/nestjs:bridge") as never;
