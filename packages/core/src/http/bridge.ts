import type { IncomingMessage, ServerResponse } from "node:http";
import { ExecContext } from "../context/exec-context.js";
import { newRequestId } from "../context/ids.js";
import { ErrorCode, NervaError } from "../errors.js";
import { resolveIdentity, type HttpRequestLike } from "./identity.js";
import { parseHttpOptions, type NervaHttpOptions, type ResolvedHttpOptions } from "./options.js";
import { logAgentFailure } from "./failure-log.js";
import { httpStatusOf } from "./status.js";

/** Client request ids we accept with `trustRequestId` (anything else gets a fresh id). */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

const OPEN = 0;
const FINISHED = 1;
const ABORTED = 2;

/**
 * Turns framework requests into ExecContexts: the one implementation behind `@nerva/express`,
 * `@nerva/fastify` and `@nerva/nestjs`. A bridge calls {@link HttpBridge.begin} as early as it
 * can and reads the context lazily through {@link RequestScope.context}, so identity is resolved
 * after the app's own authentication ran, wherever that runs.
 *
 * @example
 * const bridge = new HttpBridge({ requireAuth: true }); // throws INVALID_OPTIONS naming a bad option
 * http.createServer((req, res) => {
 *   const scope = bridge.begin(req, res);
 *   const ctx = scope.context(req); // throws NervaError UNAUTHENTICATED without a user
 * });
 */
export class HttpBridge<Req extends HttpRequestLike = HttpRequestLike> {
  readonly options: ResolvedHttpOptions;

  constructor(options: NervaHttpOptions<Req> = {}) {
    this.options = parseHttpOptions(options);
  }

  /**
   * Starts one request: picks its request id, returns it in the response header (unless
   * `sendHeader` is `false`: the bridge sets it its own way), and ties the context's lifecycle to
   * the response — disposed when the response finishes, cancelled when the client goes away
   * before that.
   */
  begin(req: IncomingMessage, res: ServerResponse, sendHeader = true): RequestScope<Req> {
    const scope = new RequestScope<Req>(this, this.#requestId(req), this.#traceparent(req));
    if (sendHeader && !res.headersSent) {
      res.setHeader(this.options.requestIdHeader, scope.requestId);
    }
    if (res.writableFinished || res.destroyed) {
      scope.end(!res.writableFinished);
    } else {
      res.on("close", () => scope.end(!res.writableFinished));
    }
    return scope;
  }

  #traceparent(req: IncomingMessage): string | undefined {
    const from = this.options.traceparentFrom;
    if (from === null) {
      const header = req.headers.traceparent;
      return Array.isArray(header) ? header[0] : header;
    }
    try {
      return from(req) ?? undefined;
    } catch (err) {
      // Tracing must not fail the request: the context starts a trace of its own.
      this.options.onError(err, null);
      return undefined;
    }
  }

  #requestId(req: IncomingMessage): string {
    if (this.options.trustRequestId) {
      const value = req.headers[this.options.requestIdHeader];
      if (typeof value === "string" && REQUEST_ID.test(value)) return value;
    }
    return newRequestId();
  }

  /** Reports a 5xx to the `onError` option; other statuses are the client's business. */
  report(error: unknown, requestId: string | null): void {
    if (httpStatusOf(error) >= 500) this.options.onError(error, requestId);
  }
}

/**
 * One request's lazily created ExecContext. The first {@link RequestScope.context} call resolves
 * the identity (after the app's auth ran) and creates the context; later calls return the same
 * one. A failed resolution is remembered: every later call throws the same error, so a request
 * never falls back to an anonymous context.
 *
 * @example
 * const scope = bridge.begin(req, res);
 * const ctx = scope.context(req); // same object on every later call
 */
export class RequestScope<Req extends HttpRequestLike = HttpRequestLike> {
  readonly requestId: string;
  readonly #bridge: HttpBridge<Req>;
  readonly #traceparent: string | undefined;
  #ctx: ExecContext | null = null;
  #error: unknown = null;
  #user: unknown = undefined;
  #state: typeof OPEN | typeof FINISHED | typeof ABORTED = OPEN;

  constructor(bridge: HttpBridge<Req>, requestId: string, traceparent: string | undefined) {
    this.#bridge = bridge;
    this.requestId = requestId;
    this.#traceparent = traceparent;
  }

  /** `true` once the client went away before the response finished. */
  get aborted(): boolean {
    return this.#state === ABORTED;
  }

  /** The context if it was already created, without resolving anything. */
  peek(): ExecContext | null {
    return this.#ctx;
  }

  /**
   * The request's context, created on first call from `req` (whose `user` the app's auth set).
   * Throws NervaError UNAUTHENTICATED (`requireAuth`), the error `resolve` threw when it carries
   * an HTTP status or is a NervaError, NervaError INTERNAL otherwise — and INTERNAL when the user
   * changed after the context was created (it was read before authentication ran).
   */
  context(req: Req): ExecContext {
    const ctx = this.#ctx;
    if (ctx !== null) {
      if (req.user !== this.#user) throw this.#staleUser();
      return ctx;
    }
    if (this.#error !== null) throw this.#error;
    return this.#create(req);
  }

  #create(req: Req): ExecContext {
    const options = this.#bridge.options;
    let ctx: ExecContext;
    try {
      const identity = resolveIdentity(req, options);
      ctx = ExecContext.create({
        userId: identity.userId,
        sessionId: identity.sessionId,
        permissions: identity.permissions,
        memoryScope: identity.memoryScope,
        timeoutSeconds: options.timeoutSeconds,
        requestId: this.requestId,
        traceparent: this.#traceparent ?? null,
        traceSink: options.traceSink,
      });
    } catch (err) {
      this.#error = asResolveError(err);
      throw this.#error;
    }
    this.#user = req.user;
    this.#ctx = ctx;
    if (this.#state === ABORTED && options.cancelOnDisconnect) ctx.cancel("client disconnected");
    else if (this.#state === FINISHED) ctx.dispose();
    return ctx;
  }

  #staleUser(): NervaError {
    return new NervaError(
      ErrorCode.INTERNAL,
      "The request's user changed after its Nerva context was created: nervaCtx was read before your authentication ran. Read it in route handlers, or after your auth middleware/hook/guard.",
    );
  }

  /** Reports `error` to the bridge's `onError` option when it answers with a 5xx. */
  report(error: unknown): void {
    this.#bridge.report(error, this.requestId);
  }

  /**
   * Ends the request: `aborted` cancels the context (the client went away), otherwise it is
   * disposed. Bridges call it from the response's `close` event (done by {@link HttpBridge.begin}).
   */
  end(aborted: boolean): void {
    if (this.#state !== OPEN) return;
    this.#state = aborted ? ABORTED : FINISHED;
    const ctx = this.#ctx;
    if (ctx === null) return;
    const { logger, cancelOnDisconnect } = this.#bridge.options;
    if (aborted && cancelOnDisconnect) ctx.cancel("client disconnected");
    // A request the client left fails by its own cancel: nothing internal to report.
    else if (logger !== null) logAgentFailure(logger, this.requestId, ctx);
    ctx.dispose();
  }
}

/** What a failed resolution throws: NervaErrors and errors with an HTTP status as they are. */
function asResolveError(err: unknown): unknown {
  if (err instanceof NervaError) {
    // ExecContext.create validates what resolve produced: a bad value is a server bug, not input.
    return err.code === ErrorCode.INVALID_OPTIONS
      ? new NervaError(ErrorCode.INTERNAL, `Could not create the request context: ${err.message}`, {
          cause: err,
        })
      : err;
  }
  if (httpStatusOf(err) !== 500) return err;
  return new NervaError(
    ErrorCode.INTERNAL,
    `resolve(req) failed: ${err instanceof Error ? err.message : String(err)}`,
    { cause: err },
  );
}

/** Where a bridge keeps a request's scope (a registered symbol, shared by every copy of Nerva). */
const SCOPE: unique symbol = Symbol.for("nerva.http.requestScope") as never;

/**
 * Remembers `scope` on a request object (framework request or raw `IncomingMessage`).
 *
 * @example
 * setRequestScope(req, bridge.begin(req, res));
 */
export function setRequestScope(target: object, scope: RequestScope<never>): void {
  (target as { [SCOPE]?: RequestScope<never> })[SCOPE] = scope;
}

/**
 * The scope {@link setRequestScope} stored on `target`, or `undefined`.
 *
 * @example
 * const scope = getRequestScope(req.raw ?? req);
 */
export function getRequestScope<Req extends HttpRequestLike = HttpRequestLike>(
  target: object,
): RequestScope<Req> | undefined {
  return (target as { [SCOPE]?: RequestScope<Req> })[SCOPE];
}

/** Prototypes that already carry the lazy getter, per property name. */
const withGetter = new Map<string, WeakSet<object>>();

/**
 * Gives `req` a lazy `nervaCtx` (or `property`) getter reading `scope`: the context is resolved on
 * first read, i.e. after whatever authentication ran before that read. The getter is defined once
 * on the request prototype (e.g. Express's `app.request`), so requests keep one object shape;
 * a request whose prototype is a plain `Object.prototype` gets its own getter.
 *
 * @example
 * defineContextGetter(req, bridge.begin(req, res));
 * req.nervaCtx.userId;
 */
export function defineContextGetter<Req extends HttpRequestLike>(
  req: Req,
  scope: RequestScope<Req>,
  property = "nervaCtx",
): void {
  setRequestScope(req, scope as RequestScope<never>);
  const proto = Object.getPrototypeOf(req) as object | null;
  if (proto === null || proto === Object.prototype) {
    Object.defineProperty(req, property, {
      configurable: true,
      enumerable: false,
      get: () => scope.context(req),
    });
    return;
  }
  let done = withGetter.get(property);
  if (done === undefined) withGetter.set(property, (done = new WeakSet()));
  if (done.has(proto)) return;
  Object.defineProperty(proto, property, {
    configurable: true,
    enumerable: false,
    get(this: Req): ExecContext {
      const own = getRequestScope<Req>(this);
      if (own === undefined) {
        throw new NervaError(
          ErrorCode.INTERNAL,
          `${property} was read on a request the Nerva bridge did not see: install the bridge (e.g. app.use(nervaMiddleware())) before the routes that read it.`,
        );
      }
      return own.context(this);
    },
  });
  done.add(proto);
}
