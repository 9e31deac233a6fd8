import { isNervaError, type ExecContext } from "@nerva/core";
import {
  createHttpBridge,
  defineContextGetter,
  getRequestScope,
  toHttpError,
  type NervaHttpOptions,
} from "@nerva/core/http";
import type { ErrorRequestHandler, Request, RequestHandler } from "express";

declare global {
  // Express's own typings are declared in this global namespace; augmenting it is how
  // middleware adds typed request properties.
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /**
       * The request's Nerva ExecContext, resolved on first read — after whatever authentication
       * ran before that read — and the same object on every later read. Set by `nervaMiddleware()`.
       */
      readonly nervaCtx: ExecContext;
    }
  }
}

/**
 * Options of {@link nervaMiddleware}: the shared bridge options, with `resolve` receiving
 * Express's `req`.
 *
 * @example
 * const options: NervaExpressOptions = { requireAuth: true, resolve: (req) => ({ userId: req.get("x-gateway-user") ?? null }) };
 */
export type NervaExpressOptions = NervaHttpOptions<Request>;

/**
 * Express middleware that gives every request a `req.nervaCtx`. The context is created lazily on
 * first read, so authentication middleware placed before or after this one has run by the time a
 * route handler reads it. The response carries the request id (`x-request-id`), the context joins
 * the caller's W3C trace (`traceparent`), is cancelled when the client disconnects early and is
 * disposed when the response finishes. Throws NervaError INVALID_OPTIONS for bad options.
 *
 * @example
 * app.use(nervaMiddleware({ requireAuth: true }));
 * app.post("/chat", async (req, res) => res.json(await orchestrator.handle(req.body.message, req.nervaCtx)));
 * app.use(nervaErrorHandler());
 */
export function nervaMiddleware(options: NervaExpressOptions = {}): RequestHandler {
  const bridge = createHttpBridge<Request>(options);
  return function nerva(req, res, next) {
    defineContextGetter(req, bridge.begin(req, res));
    next();
  };
}

/**
 * Express error handler that answers NervaErrors with their HTTP status (400 with the validation
 * issues, 401, 403, 202 approval pending, 429 with `Retry-After`, 503, 504...) and a JSON body
 * `{ error: { code, message, requestId, issues?, details? } }`. Other errors go to the next error
 * handler. 5xx answers never expose the message; they are reported to the `onError` option.
 * Register it after your routes.
 *
 * @example
 * app.use(nervaErrorHandler());
 */
export function nervaErrorHandler(): ErrorRequestHandler {
  return function nervaErrors(err: unknown, req, res, next) {
    if (!isNervaError(err) || res.headersSent) {
      next(err);
      return;
    }
    const scope = getRequestScope(req);
    const requestId = scope?.requestId ?? null;
    const { status, headers, body } = toHttpError(err, requestId);
    scope?.report(err);
    res.status(status).set(headers).json(body);
  };
}
