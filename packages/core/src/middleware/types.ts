import type { ExecContext } from "../context/exec-context.js";
import type { FormattedResponse } from "../responder/types.js";
import type { RouteResult } from "../router/types.js";
import type { AgentInput, AgentResult } from "../types/agent.js";

/**
 * The stages of the middleware pipeline, in order (plus `on_error`). The values are the wire
 * values of Nerva's published spec, snake_case like the policy's `Checkpoint` (`before_route` is the
 * same moment in both); each stage runs the middleware method named in {@link MIDDLEWARE_HOOKS}
 * (`before_route` → `beforeRoute`).
 *
 * @example
 * pipeline.has(MiddlewareStage.BEFORE_ROUTE); // any middleware with a beforeRoute method?
 */
export const MiddlewareStage = {
  BEFORE_ROUTE: "before_route",
  AFTER_ROUTE: "after_route",
  BEFORE_INVOKE: "before_invoke",
  AFTER_INVOKE: "after_invoke",
  BEFORE_RESPOND: "before_respond",
  ON_ERROR: "on_error",
} as const;
export type MiddlewareStage = (typeof MiddlewareStage)[keyof typeof MiddlewareStage];

/**
 * The middleware method each stage calls (methods are camelCase TypeScript names; stages are
 * wire values).
 *
 * @example
 * MIDDLEWARE_HOOKS[MiddlewareStage.BEFORE_ROUTE]; // "beforeRoute"
 */
export const MIDDLEWARE_HOOKS = Object.freeze({
  before_route: "beforeRoute",
  after_route: "afterRoute",
  before_invoke: "beforeInvoke",
  after_invoke: "afterInvoke",
  before_respond: "beforeRespond",
  on_error: "onError",
} as const satisfies Record<MiddlewareStage, keyof Middleware>);

/**
 * Where in a request an error happened: a middleware stage, or the primitive between two stages
 * (`route`: policy and router; `invoke`: policy and runtime; `respond`: responder and memory).
 */
export type PipelineStage = Exclude<MiddlewareStage, "on_error"> | "route" | "invoke" | "respond";

/** What `beforeInvoke` receives and returns: the handler about to run and its input. */
export interface InvocationRequest {
  readonly handler: string;
  readonly input: AgentInput;
}

/** What the orchestrator answers (and `beforeRespond` may change): a formatted response. */
export type OrchestratorResponse = FormattedResponse;

/**
 * A middleware: an object with any of the hooks below. Each payload hook returns the payload
 * (changed or not) for the next middleware; a hook that throws stops the pipeline, the error
 * reaches every `onError`, and the request fails with it (it never continues with the last
 * payload). `onError` observes; it cannot turn a failure into a success.
 *
 * @example
 * class TagMiddleware implements Middleware {
 *   readonly name = "tag";
 *   beforeRoute(message: string, ctx: ExecContext): string {
 *     ctx.event("tagged", { user: ctx.userId ?? "anonymous" });
 *     return message.trim();
 *   }
 * }
 */
export interface Middleware {
  /** Shown in errors and events; defaults to the class name. */
  readonly name?: string;
  beforeRoute?(message: string, ctx: ExecContext): string | Promise<string>;
  afterRoute?(route: RouteResult, ctx: ExecContext): RouteResult | Promise<RouteResult>;
  beforeInvoke?(
    request: InvocationRequest,
    ctx: ExecContext,
  ): InvocationRequest | Promise<InvocationRequest>;
  afterInvoke?(result: AgentResult, ctx: ExecContext): AgentResult | Promise<AgentResult>;
  beforeRespond?(
    response: OrchestratorResponse,
    ctx: ExecContext,
  ): OrchestratorResponse | Promise<OrchestratorResponse>;
  onError?(error: unknown, ctx: ExecContext, stage: PipelineStage): void | Promise<void>;
}
