import type { ServerResponse } from "node:http";
import { ErrorCode, NervaError, type ExecContext } from "@nerva/core";
import { getRequestScope, type HttpRequestLike, type RequestScope } from "@nerva/core/http";
import { createParamDecorator, type ExecutionContext } from "@nestjs/common";
import { SSE_METADATA } from "@nestjs/common/constants.js";

type PlatformRequest = HttpRequestLike & { raw?: object };

/** The Nerva scope of the current HTTP request (Express or Fastify platform). */
export function requestScopeOf(request: PlatformRequest): RequestScope | undefined {
  return (
    getRequestScope(request) ??
    (request.raw === undefined ? undefined : getRequestScope(request.raw))
  );
}

/**
 * The Node response of each context `@NervaCtx()` gave out in an `@Sse()` route, so that
 * `toSSEObservable(source, ctx)` can wait for its socket and report to the module's `onError`.
 * Weak: an entry lives as long as its context.
 */
const responses = new WeakMap<ExecContext, ServerResponse>();

/** Whether each route handler is an `@Sse()` route, read from Nest's metadata once per handler. */
const sseRoutes = new WeakMap<object, boolean>();

/**
 * Only an `@Sse()` route needs its response recorded: a WeakMap entry per request costs the
 * garbage collector more than the rest of `@NervaCtx()` does.
 */
function isSSERoute(context: ExecutionContext): boolean {
  const handler = context.getHandler();
  let sse = sseRoutes.get(handler);
  if (sse === undefined) {
    const reflect = Reflect as unknown as { getMetadata?: (key: string, on: object) => unknown };
    sse = reflect.getMetadata?.(SSE_METADATA, handler) === true;
    sseRoutes.set(handler, sse);
  }
  return sse;
}

/** The Node response behind a context `@NervaCtx()` resolved, if any. */
export function rawResponseOf(ctx: ExecContext): ServerResponse | undefined {
  return responses.get(ctx);
}

/**
 * The platform request of `context` where Nest has one: HTTP, and GraphQL when its context
 * carries `req` (the usual `context: ({ req }) => ({ req })` of the GraphQL module). Throws
 * NervaError INTERNAL naming the context type otherwise (WebSocket, microservice).
 */
function requestOf(context: ExecutionContext): PlatformRequest {
  const type = context.getType<string>();
  // The request is the first argument (what switchToHttp().getRequest() reads, without the
  // three closures switchToHttp() makes on every call).
  if (type === "http") return context.getArgByIndex<PlatformRequest>(0);
  if (type === "graphql") {
    const gqlContext = context.getArgByIndex<{ req?: PlatformRequest } | undefined>(2);
    if (typeof gqlContext?.req?.headers === "object") return gqlContext.req;
  }
  throw new NervaError(
    ErrorCode.INTERNAL,
    `@NervaCtx() needs an HTTP request, and this ${type} execution context has none${type === "graphql" ? " in its context (return { req } from the GraphQL module's context option)" : ""}. Outside HTTP, create a context with ExecContext.create({ userId, ... }) from what the transport authenticated.`,
  );
}

/**
 * The ExecContext of an execution context: resolved on first use from the platform request
 * (after guards set `request.user`), the same object afterwards. Works for HTTP routes on either
 * platform and for GraphQL resolvers whose context carries `req`. Throws NervaError
 * UNAUTHENTICATED with `requireAuth` and no user, INTERNAL when NervaModule is not imported or
 * when Nest has no HTTP request for this context (WebSocket gateways, microservices).
 *
 * @example
 * const ctx = nervaContextOf(executionContext);
 */
export function nervaContextOf(context: ExecutionContext): ExecContext {
  const request = requestOf(context);
  const scope = requestScopeOf(request);
  if (scope === undefined) {
    throw new NervaError(
      ErrorCode.INTERNAL,
      "No Nerva context on this request: import NervaModule.forRoot(...) (or forRootAsync) in your application module; its middleware creates the context for every route.",
    );
  }
  const ctx = scope.context(request);
  if (context.getType<string>() === "http" && isSSERoute(context) && !responses.has(ctx)) {
    const response = context.getArgByIndex<(ServerResponse & { raw?: ServerResponse }) | null>(1);
    const raw = response?.raw ?? response;
    if (typeof raw?.write === "function") responses.set(ctx, raw);
  }
  return ctx;
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
