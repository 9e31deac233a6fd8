import { ErrorCode, NervaError, type ExecContext } from "@nerva/core";
import { getRequestScope, type HttpRequestLike, type RequestScope } from "@nerva/core/http";
import { createParamDecorator, type ExecutionContext } from "@nestjs/common";

type PlatformRequest = HttpRequestLike & { raw?: object };

/** The Nerva scope of the current HTTP request (Express or Fastify platform). */
export function requestScopeOf(request: PlatformRequest): RequestScope | undefined {
  return (
    getRequestScope(request) ??
    (request.raw === undefined ? undefined : getRequestScope(request.raw))
  );
}

/**
 * The ExecContext of an HTTP execution context: resolved on first use from the platform request
 * (after guards set `request.user`), the same object afterwards. Throws NervaError
 * UNAUTHENTICATED with `requireAuth` and no user, INTERNAL when NervaModule is not imported.
 *
 * @example
 * const ctx = nervaContextOf(executionContext);
 */
export function nervaContextOf(context: ExecutionContext): ExecContext {
  const request = context.switchToHttp().getRequest<PlatformRequest>();
  const scope = requestScopeOf(request);
  if (scope === undefined) {
    throw new NervaError(
      ErrorCode.INTERNAL,
      "No Nerva context on this request: import NervaModule.forRoot(...) (or forRootAsync) in your application module; its middleware creates the context for every route.",
    );
  }
  return scope.context(request);
}

/**
 * Parameter decorator giving a route handler the request's ExecContext: identity from the
 * `request.user` your guards set (e.g. `@nestjs/passport`'s `AuthGuard("jwt")`), the request id
 * returned in `x-request-id`, the caller's trace from `traceparent`, cancelled when the client
 * disconnects early. Works on the Express and Fastify platforms.
 *
 * @example
 * @Post("chat")
 * chat(@Body() body: { message: string }, @NervaCtx() ctx: ExecContext) {
 *   return this.orchestrator.handle(body.message, ctx);
 * }
 */
export const NervaCtx: () => ParameterDecorator = createParamDecorator(
  (_data: unknown, context: ExecutionContext) => nervaContextOf(context),
);
