import type { ExecContext } from "../context/exec-context.js";
import type { FormattedResponse } from "../responder/types.js";
import type { RouteResult } from "../router/types.js";
import type { AgentInput, AgentResult } from "../types/agent.js";

/** The hooks a middleware may implement, in pipeline order (plus `onError`). */
export const MiddlewareStage = {
  BEFORE_ROUTE: "beforeRoute",
  AFTER_ROUTE: "afterRoute",
  BEFORE_INVOKE: "beforeInvoke",
  AFTER_INVOKE: "afterInvoke",
  BEFORE_RESPOND: "beforeRespond",
  ON_ERROR: "onError",
} as const;
export type MiddlewareStage = (typeof MiddlewareStage)[keyof typeof MiddlewareStage];

/**
 * Where in a request an error happened: a middleware stage, or the primitive between two stages
 * (`route`: policy and router; `invoke`: policy and runtime; `respond`: memory and responder).
 */
export type PipelineStage = Exclude<MiddlewareStage, "onError"> | "route" | "invoke" | "respond";

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
