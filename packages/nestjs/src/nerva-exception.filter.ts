import { toHttpError, type HttpRequestLike } from "@nerva/core/http";
import type { IncomingMessage, ServerResponse } from "node:http";
import {
  Catch,
  HttpException,
  Inject,
  Logger,
  Optional,
  type ArgumentsHost,
  type ExceptionFilter,
} from "@nestjs/common";
import { HttpAdapterHost } from "@nestjs/core";
import { throwError, type Observable } from "rxjs";
import { requestScopeOf } from "./nerva-ctx.decorator.js";
import { NervaMiddleware } from "./nerva.middleware.js";

const logger = new Logger("Nerva");

/**
 * The validation messages of an `HttpException` whose response lists them (`ValidationPipe`'s
 * `{ message: string[] }`), as issues of the answer.
 */
function issuesOf(error: unknown): { path: string; message: string }[] | undefined {
  if (!(error instanceof HttpException) || error.getStatus() !== 400) return undefined;
  const response = error.getResponse() as { message?: unknown } | string;
  if (typeof response !== "object" || !Array.isArray(response.message)) return undefined;
  return response.message
    .filter((m): m is string => typeof m === "string")
    .slice(0, 50)
    .map((message) => ({ path: "body", message }));
}

/**
 * Answers every error of an HTTP route with its status and the JSON body
 * `{ error: { code, message, requestId, issues?, details? } }`, on either platform: NervaErrors by
 * their code (400 with the validation issues, 401, 403, 202 approval pending, 429 with
 * `Retry-After`, 503, 504...), the body parser's errors with fixed messages (400 malformed JSON,
 * 413 too large, 415 unsupported type), `HttpException`s and other errors with their own 4xx status
 * and message, anything else 500 with a generic message and the request id. No stack, path or
 * 5xx message reaches the client; 5xx errors go to the `onError` option. Installed globally by
 * `NervaModule` unless `exceptionFilter: false`; a filter of your own on a controller or route
 * still takes precedence. Errors of other transports (WebSocket, microservices) are passed on.
 *
 * @example
 * app.useGlobalFilters(new NervaExceptionFilter(app.get(HttpAdapterHost)));
 */
@Catch()
export class NervaExceptionFilter implements ExceptionFilter {
  constructor(
    @Inject(HttpAdapterHost) private readonly adapterHost: HttpAdapterHost,
    @Optional() @Inject(NervaMiddleware) private readonly middleware?: NervaMiddleware,
  ) {}

  catch(error: unknown, host: ArgumentsHost): void | Observable<never> {
    if (host.getType() !== "http") return throwError(() => error);
    const http = host.switchToHttp();
    const request = http.getRequest<HttpRequestLike & { raw?: IncomingMessage }>();
    const response = http.getResponse<{ raw?: ServerResponse }>();
    let scope = requestScopeOf(request);
    if (scope === undefined && this.middleware !== undefined) {
      // The error came before the bridge's own hook ran (a body parser, or middleware that runs
      // first): start the request's scope now, so the answer still carries its request id.
      const rawRequest = request.raw ?? (request as unknown as IncomingMessage);
      this.middleware.start(rawRequest, response.raw ?? (response as ServerResponse), !request.raw);
      scope = requestScopeOf(request);
    }
    const adapter = this.adapterHost.httpAdapter;
    const answer = toHttpError(error, scope?.requestId ?? null);
    if (scope !== undefined) scope.report(error);
    else if (answer.status >= 500) logger.error("request failed", error);
    if (adapter.isHeadersSent(response)) return;
    const issues = answer.body.error.issues ?? issuesOf(error);
    const body = issues === undefined ? answer.body : { error: { ...answer.body.error, issues } };
    for (const [name, value] of Object.entries(answer.headers)) {
      adapter.setHeader(response, name, value);
    }
    adapter.reply(response, body, answer.status);
  }
}
