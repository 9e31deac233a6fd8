import { z } from "zod";
import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, isNervaError, parseOrThrow } from "../errors.js";
import type { RouteResult } from "../router/types.js";
import type { AgentResult } from "../types/agent.js";
import type { Middleware, OrchestratorResponse, PipelineStage } from "./types.js";

/** One structured log record (written as one JSON line). */
export interface LogRecord {
  readonly ts: string;
  readonly level: "info" | "error";
  readonly event: string;
  readonly request_id: string;
  readonly trace_id: string;
  /** The span current when the record was written (the request's `handle` span), or null. */
  readonly span_id: string | null;
  readonly user_id: string | null;
  readonly [field: string]: unknown;
}

const OptionsSchema = z
  .object({
    /** Receives each record as one JSON line (no trailing newline). Default: stdout. */
    write: z
      .custom<(line: string) => void>((v) => typeof v === "function", "must be a function")
      .optional(),
    /** Log message texts (default false: only their length, since messages may hold personal data). */
    includeMessage: z.boolean().default(false),
  })
  .strict();
/** Options of {@link LoggingMiddleware}. */
export type LoggingMiddlewareOptions = z.input<typeof OptionsSchema>;

/**
 * Structured request logging as JSON lines: `request.received`, `request.routed`,
 * `handler.completed`, `request.responded`, `request.failed`, each with request, trace, span and
 * user ids (`span_id` joins the record to the `JsonLinesTraceSink` line of the same span).
 * Payloads pass through unchanged.
 *
 * @example
 * const lines: string[] = [];
 * const logging = new LoggingMiddleware({ write: (line) => lines.push(line) });
 */
export class LoggingMiddleware implements Middleware {
  readonly name = "logging";
  readonly #write: (line: string) => void;
  readonly #includeMessage: boolean;

  constructor(options: LoggingMiddlewareOptions = {}) {
    const o = parseOrThrow(
      OptionsSchema,
      options,
      ErrorCode.INVALID_OPTIONS,
      "options",
      "Pass { write?: (line: string) => void, includeMessage?: boolean }.",
    );
    this.#write = o.write ?? ((line) => void process.stdout.write(`${line}\n`));
    this.#includeMessage = o.includeMessage;
  }

  #log(
    ctx: ExecContext,
    level: "info" | "error",
    event: string,
    fields: Record<string, unknown>,
  ): void {
    const record: LogRecord = {
      ts: new Date().toISOString(),
      level,
      event,
      request_id: ctx.requestId,
      trace_id: ctx.traceId,
      span_id: ctx.currentSpanId,
      user_id: ctx.userId,
      ...fields,
    };
    this.#write(JSON.stringify(record));
  }

  beforeRoute(message: string, ctx: ExecContext): string {
    this.#log(ctx, "info", "request.received", {
      session_id: ctx.sessionId,
      message_length: message.length,
      ...(this.#includeMessage ? { message } : {}),
    });
    return message;
  }

  afterRoute(route: RouteResult, ctx: ExecContext): RouteResult {
    this.#log(ctx, "info", "request.routed", {
      best: route.best?.name ?? null,
      score: route.best?.score ?? null,
      candidates: route.candidates.length,
    });
    return route;
  }

  afterInvoke(result: AgentResult, ctx: ExecContext): AgentResult {
    this.#log(ctx, result.status === "success" ? "info" : "error", "handler.completed", {
      handler: result.handler,
      status: result.status,
      error: result.error,
    });
    return result;
  }

  beforeRespond(response: OrchestratorResponse, ctx: ExecContext): OrchestratorResponse {
    this.#log(ctx, "info", "request.responded", {
      handler: response.handler,
      status: response.status,
      text_length: response.text.length,
      duration_ms: Date.now() - ctx.createdAt,
    });
    return response;
  }

  onError(error: unknown, ctx: ExecContext, stage: PipelineStage): void {
    this.#log(ctx, "error", "request.failed", {
      stage,
      code: isNervaError(error) ? error.code : null,
      error: error instanceof Error ? error.message : String(error),
    });
  }
}
