import { ErrorCode, NervaError, type ExecContext } from "@nerva/core";
import {
  HttpBridge,
  toHttpError,
  type NervaHttpOptions,
  type RequestScope,
} from "@nerva/core/http";
import type {
  FastifyError,
  FastifyInstance,
  FastifyPluginCallback,
  FastifyReply,
  FastifyRequest,
} from "fastify";
import fp from "fastify-plugin";

declare module "fastify" {
  interface FastifyRequest {
    /**
     * The request's Nerva ExecContext, resolved on first read — after the auth hooks that ran
     * before that read (`onRequest`, `preHandler`, `@fastify/jwt`...) — and the same object on
     * every later read. Set by the `@nerva/fastify` plugin.
     */
    readonly nervaCtx: ExecContext;
  }
}

/**
 * Options of {@link nervaPlugin}: the shared bridge options plus Fastify specifics.
 *
 * @example
 * await app.register(nervaPlugin, { requireAuth: true, errorHandler: false } satisfies NervaFastifyOptions);
 */
export interface NervaFastifyOptions extends NervaHttpOptions<FastifyRequest> {
  /**
   * Answer errors with the Nerva JSON body (see {@link replyNervaError}) on the routes registered
   * after the plugin, wherever Fastify's default handler would answer them. The app's root error
   * handler is never taken over: each route gets a route-level handler, which hands the error on
   * to the app's own `setErrorHandler` handler when the app has one. Default `true`; `false`
   * leaves every error to Fastify (call {@link replyNervaError} from your handler).
   */
  errorHandler?: boolean;
}

/** Where the plugin keeps each request's scope (declared with `decorateRequest`). */
export const kNervaScope: unique symbol = Symbol("nerva.requestScope");
type ScopedRequest = FastifyRequest & { [kNervaScope]: RequestScope<FastifyRequest> | null };

/** Keys Fastify itself may put into plugin options. */
const FASTIFY_KEYS = new Set(["prefix", "logLevel", "logSerializers"]);

/** The scope of a request, or a NervaError naming the missing plugin. */
export function scopeOf(request: FastifyRequest): RequestScope<FastifyRequest> {
  const scope = (request as ScopedRequest)[kNervaScope];
  if (scope === null || scope === undefined) {
    throw new NervaError(
      ErrorCode.INTERNAL,
      "request.nervaCtx was read outside the @nerva/fastify plugin's scope: register it with app.register(nervaPlugin, options) before the routes that use it.",
    );
  }
  return scope;
}

/**
 * Answers any `error` on `reply` with its HTTP status and the JSON body
 * `{ error: { code, message, requestId, issues?, details? } }`: NervaErrors by the bridge's table
 * (with `Retry-After`/`WWW-Authenticate` where they apply), Fastify's body errors with fixed
 * messages (400 malformed JSON or schema failure, 413 too large, 415 unsupported type), other
 * errors with their own 4xx status, anything else 500 with a generic message and the request id.
 * No stack, path or 5xx message is sent; 5xx errors go to the `onError` option.
 *
 * @example
 * app.setErrorHandler((error, request, reply) =>
 *   error.statusCode === 418 ? reply.code(418).send("teapot") : replyNervaError(error, request, reply));
 */
export function replyNervaError(
  error: unknown,
  request: FastifyRequest,
  reply: FastifyReply,
): FastifyReply {
  const scope = (request as ScopedRequest)[kNervaScope];
  const { status, headers, body } = toHttpError(error, scope?.requestId ?? null);
  scope?.report(error);
  return reply.code(status).headers(headers).send(body);
}

const plugin: FastifyPluginCallback<NervaFastifyOptions> = (fastify, options, done) => {
  const { errorHandler = true, ...rest } = options;
  const http = Object.fromEntries(
    Object.entries(rest).filter(([key]) => !FASTIFY_KEYS.has(key)),
  ) as NervaHttpOptions<FastifyRequest>;
  let bridge: HttpBridge<FastifyRequest>;
  try {
    bridge = new HttpBridge<FastifyRequest>(http);
  } catch (err) {
    done(err as Error);
    return;
  }

  const header = bridge.options.requestIdHeader;
  fastify.decorateRequest(kNervaScope, null);
  fastify.decorateRequest("nervaCtx", {
    getter(this: FastifyRequest): ExecContext {
      return scopeOf(this).context(this);
    },
  });
  fastify.addHook("onRequest", (request, reply, next) => {
    // The request id header goes through Fastify's own headers (cheaper than the raw response's).
    const scope = bridge.begin(request.raw, reply.raw, false);
    (request as ScopedRequest)[kNervaScope] = scope;
    reply.header(header, scope.requestId);
    next();
  });
  if (errorHandler) {
    // Route by route rather than setErrorHandler: the app's root error handler stays the app's.
    fastify.addHook("onRoute", (route) => {
      if (route.errorHandler === undefined) route.errorHandler = answerUnlessAppHandles;
    });
  }
  done();
};

/** True once the app (or a plugin) called `setErrorHandler` in the route's context or above. */
function appHandlesErrors(server: FastifyInstance): boolean {
  // Fastify's own handler is the plain `defaultErrorHandler`; setErrorHandler binds its argument.
  return server.errorHandler.name !== "defaultErrorHandler";
}

/**
 * The route-level error handler: the Nerva answer where Fastify's default would answer, the app's
 * own handler where it set one. That handler is called here rather than reached by rethrowing, as
 * a route captures its context's handler when it is built, which may be before the app set it.
 */
function answerUnlessAppHandles(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): unknown {
  const server = request.server;
  if (appHandlesErrors(server)) return server.errorHandler(error, request, reply);
  return replyNervaError(error, request, reply);
}

/**
 * Fastify 5 plugin that gives every request a lazily resolved `request.nervaCtx`: identity is read
 * from `request.user` (e.g. `@fastify/jwt`) when the context is first read, so auth in any hook
 * that runs before the handler counts. The response carries the request id, the context joins the
 * caller's W3C trace, is cancelled when the client disconnects early and disposed when the
 * response finishes. Registered with `fastify-plugin`, so it applies to the whole app; errors on
 * the routes registered after it are answered with the Nerva JSON body unless the app set its own
 * error handler (see `errorHandler`).
 *
 * @example
 * await app.register(nervaPlugin, { requireAuth: true });
 * app.post("/chat", (request) => orchestrator.handle(request.body.message, request.nervaCtx));
 */
export const nervaPlugin = fp(plugin, { fastify: "5.x", name: "@nerva/fastify" });
