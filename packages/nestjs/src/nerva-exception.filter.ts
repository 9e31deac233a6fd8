import { NervaError } from "@nerva/core";
import { toHttpError } from "@nerva/core/http";
import { Catch, Inject, type ArgumentsHost, type ExceptionFilter } from "@nestjs/common";
import { HttpAdapterHost } from "@nestjs/core";
import { requestScopeOf } from "./nerva-ctx.decorator.js";

/**
 * Answers NervaErrors with their HTTP status on either platform: 400 with the validation issues,
 * 401, 403, 202 approval pending, 429 with `Retry-After`, 503, 504... and the JSON body
 * `{ error: { code, message, requestId, issues?, details? } }`. 5xx details are not exposed and go
 * to the `onError` option. Installed globally by `NervaModule` unless `exceptionFilter: false`.
 *
 * @example
 * app.useGlobalFilters(new NervaExceptionFilter(app.get(HttpAdapterHost)));
 */
@Catch(NervaError)
export class NervaExceptionFilter implements ExceptionFilter<NervaError> {
  constructor(@Inject(HttpAdapterHost) private readonly adapterHost: HttpAdapterHost) {}

  catch(error: NervaError, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const scope = requestScopeOf(http.getRequest());
    const response: unknown = http.getResponse();
    const adapter = this.adapterHost.httpAdapter;
    const { status, headers, body } = toHttpError(error, scope?.requestId ?? null);
    scope?.report(error);
    if (adapter.isHeadersSent(response)) return;
    for (const [name, value] of Object.entries(headers)) adapter.setHeader(response, name, value);
    adapter.reply(response, body, status);
  }
}
