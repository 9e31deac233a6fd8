import { ErrorCode, NervaError, isNervaError, type ExecContext } from "@nerva/core";
import {
  createHttpBridge,
  toHttpError,
  type HttpBridge,
  type NervaHttpOptions,
  type RequestScope,
} from "@nerva/core/http";
import type { FastifyError, FastifyPluginCallback, FastifyReply, FastifyRequest } from "fastify";
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
   * Install an error handler answering NervaErrors with their HTTP status (others go on to
   * Fastify's default handler). Default `true`; set `false` if you have your own and call
   * {@link replyNervaError} from it.
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
 * Answers `error` (a NervaError, or an error the `resolve` option threw) on `reply`: HTTP
 * status from the bridge's table, `Retry-After`/`WWW-Authenticate` where they apply, and the JSON
 * body `{ error: { code, message, requestId, issues?, details? } }`. 5xx details are not exposed;
 * they go to the `onError` option.
 *
 * @example
 * app.setErrorHandler((error, request, reply) =>
 *   isNervaError(error) ? replyNervaError(error, request, reply) : reply.send(error));
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
    bridge = createHttpBridge<FastifyRequest>(http);
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
    fastify.setErrorHandler((error: FastifyError, request, reply) => {
      // Not ours: rethrowing hands it to the parent (by default Fastify's own) error handler.
      if (!isNervaError(error)) throw error;
      return replyNervaError(error, request, reply);
    });
  }
  done();
};

/**
 * Fastify 5 plugin that gives every request a lazily resolved `request.nervaCtx`: identity is read
 * from `request.user` (e.g. `@fastify/jwt`) when the context is first read, so auth in any hook
 * that runs before the handler counts. The response carries the request id, the context joins the
 * caller's W3C trace, is cancelled when the client disconnects early and disposed when the
 * response finishes. Registered with `fastify-plugin`, so it applies to the whole app.
 *
 * @example
 * await app.register(nervaPlugin, { requireAuth: true });
 * app.post("/chat", (request) => orchestrator.handle(request.body.message, request.nervaCtx));
 */
export const nervaPlugin = fp(plugin, { fastify: "5.x", name: "@nerva/fastify" });
