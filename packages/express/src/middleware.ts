import { ErrorCode, NervaError, type ExecContext } from "@nerva/core";
import {
  HttpBridge,
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
  const bridge = new HttpBridge<Request>(options);
  return function nerva(req, res, next) {
    defineContextGetter(req, bridge.begin(req, res));
    next();
  };
}

/**
 * Express error handler that answers every error with its HTTP status and the JSON body
 * `{ error: { code, message, requestId, issues?, details? } }`: NervaErrors by their code (400
 * with the validation issues, 401, 403, 202 approval pending, 429 with `Retry-After`, 503,
 * 504...), the body parser's errors with fixed messages (400 malformed JSON, 413 too large, 415
 * unsupported type), other errors with their own 4xx status, and anything else with 500 and a
 * generic message holding the request id. No stack, path or 5xx message reaches the client; 5xx
 * errors go to the `onError` option (to `console.error` for a request `nervaMiddleware` never
 * saw: install it first, before the body parser). Register it after your routes.
 *
 * @example
 * app.use(nervaErrorHandler());
 */
export function nervaErrorHandler(): ErrorRequestHandler {
  return function nervaErrors(err: unknown, req, res, next) {
    if (res.headersSent) {
      // Too late for an answer: Express's own handler closes the connection.
      next(err);
      return;
    }
    const scope = getRequestScope(req);
    const requestId = scope?.requestId ?? null;
    const answer = toHttpError(err, requestId);
    if (scope !== undefined) scope.report(err);
    else if (answer.status >= 500) console.error("[nerva] request failed:", err);
    res.status(answer.status).set(answer.headers).json(answer.body);
  };
}

/**
 * Answers a request no route took with 404 and the Nerva JSON body
 * `{ error: { code: "NOT_FOUND", message, requestId } }`, instead of Express's HTML
 * "Cannot GET /x". Register it after your routes and before `nervaErrorHandler()`.
 *
 * @example
 * app.use(nervaNotFound());
 * app.use(nervaErrorHandler());
 */
export function nervaNotFound(): RequestHandler {
  return function nervaNotFoundHandler(req, res) {
    const path = req.path.length > 200 ? `${req.path.slice(0, 200)}…` : req.path;
    const error = new NervaError(ErrorCode.NOT_FOUND, `No route for ${req.method} ${path}.`);
    const answer = toHttpError(error, getRequestScope(req)?.requestId ?? null);
    res.status(answer.status).set(answer.headers).json(answer.body);
  };
}
