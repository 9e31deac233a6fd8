import type { IncomingMessage, ServerResponse } from "node:http";
import {
  defineContextGetter,
  setRequestScope,
  type HttpBridge,
  type HttpRequestLike,
} from "@nerva/core/http";
import { Inject, Injectable, type NestMiddleware } from "@nestjs/common";
import { NERVA_BRIDGE } from "./nerva.constants.js";

/**
 * Starts each request's Nerva scope (request id header, disconnect cancellation, disposal) before
 * guards run. On the Express platform it also defines `req.nervaCtx`. Applied to every route by
 * `NervaModule`; the context itself is resolved later, by `@NervaCtx()`, after the guards set
 * `request.user`.
 *
 * @example
 * consumer.apply(NervaMiddleware).forRoutes({ path: "{*path}", method: RequestMethod.ALL });
 */
@Injectable()
export class NervaMiddleware implements NestMiddleware {
  constructor(@Inject(NERVA_BRIDGE) private readonly bridge: HttpBridge) {}

  use(req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void): void {
    this.start(req, res, false);
    next();
  }

  /**
   * Starts the scope of one request and stores it on `req` (where `@NervaCtx()` finds it).
   * `platformRequest`: `req` is the object controllers see (Express platform), so it also gets a
   * lazy `req.nervaCtx`. On the Fastify platform `req` is the raw request: no getter there, as
   * identity lives on Fastify's request object.
   */
  start(req: IncomingMessage, res: ServerResponse, platformRequest: boolean): void {
    const scope = this.bridge.begin(req, res);
    setRequestScope(req, scope);
    if (platformRequest) defineContextGetter(req as IncomingMessage & HttpRequestLike, scope);
  }
}
