import { httpStatusOfResult } from "@nerva/core/http";
import {
  Injectable,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from "@nestjs/common";
import { HttpAdapterHost, Reflector } from "@nestjs/core";
import { map, type Observable } from "rxjs";

/** What `@HttpCode()` sets (`HTTP_CODE_METADATA` of @nestjs/common, not exported by its index). */
const HTTP_CODE_METADATA = "__httpCode__";

const AGENT_STATUSES = new Set([
  "success",
  "error",
  "timeout",
  "wrong_handler",
  "needs_data",
  "needs_credentials",
]);

/**
 * Whether `value` is what `orchestrator.handle()` or `runtime.invoke()` resolves with: its
 * `status` is an agent status and it has the `handler`, `data` and `error` fields of one.
 */
function isAgentAnswer(value: unknown): value is { status: string } {
  if (typeof value !== "object" || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v.status === "string" &&
    AGENT_STATUSES.has(v.status) &&
    typeof v.handler === "string" &&
    typeof v.data === "object" &&
    v.data !== null &&
    (v.error === null || typeof v.error === "string")
  );
}

/**
 * Gives a route that returns an agent's answer (`orchestrator.handle()`, `runtime.invoke()`) the
 * HTTP status the other bridges answer with `httpStatusOfResult`: 200 for success, 502 when the
 * agent failed, 504 on its timeout, 422 when no agent could take it — instead of Nest's 201 for
 * every POST. A route with its own `@HttpCode()` keeps it; other return values are untouched.
 * Installed globally by `NervaModule` (switch: `resultStatus: false`).
 *
 * @example
 * @Post("chat")
 * chat(@Body() body: { message: string }, @NervaCtx() ctx: ExecContext) {
 *   return this.orchestrator.handle(body.message, ctx); // 502 when the agent failed
 * }
 */
@Injectable()
export class NervaResultInterceptor implements NestInterceptor {
  constructor(
    private readonly reflector: Reflector,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (
      context.getType() !== "http" ||
      this.reflector.get(HTTP_CODE_METADATA, context.getHandler()) !== undefined
    ) {
      return next.handle();
    }
    return next.handle().pipe(
      map((value: unknown) => {
        if (isAgentAnswer(value)) {
          const res: unknown = context.switchToHttp().getResponse();
          this.adapterHost.httpAdapter.status(res, httpStatusOfResult(value as never));
        }
        return value;
      }),
    );
  }
}
