import type { ExecContext } from "../context/exec-context.js";
import type { Span } from "../context/span.js";
import type { NervaLogger } from "./options.js";

/**
 * Logs the agent failure of a finished request, if it had one: the client was told only that
 * the agent failed, and the cause (say, the model's URL refusing connections) is on a span. The
 * first `runtime.invoke` span to end in error is the innermost failure (a delegating agent fails
 * after the agent it called); one line per request.
 */
export function logAgentFailure(logger: NervaLogger, requestId: string, ctx: ExecContext): void {
  let failed: Span | null = null;
  for (const span of ctx.spans) {
    if (span.name !== "runtime.invoke" || span.status !== "error") continue;
    if (failed === null || (span.endMs ?? Infinity) < (failed.endMs ?? Infinity)) failed = span;
  }
  if (failed === null) return;
  const a = failed.attributes;
  const handler = typeof a.handler === "string" ? a.handler : null;
  const status = typeof a.status === "string" ? a.status : "error";
  const code = typeof a.code === "string" ? a.code : null;
  const error = failed.error ?? status;
  logger.error(
    `request ${requestId}: agent "${handler ?? "?"}" ended ${status}${code === null ? "" : ` (${code})`}: ${error}`,
    { requestId, traceId: ctx.traceId, handler, status, code, error },
  );
}
