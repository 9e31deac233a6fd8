import type { ExecContext } from "../context/exec-context.js";
import type { Span } from "../context/span.js";
import { ErrorCode, NervaError } from "../errors.js";
import type {
  Memory,
  MemoryEventInit,
  MemoryItem,
  MemoryQuery,
  MemoryRecall,
} from "../memory/types.js";
import type { Channel, FormattedResponse } from "../responder/types.js";
import type { RouteResult } from "../router/types.js";
import type { Attributes } from "../types/trace.js";
import { messageOf } from "../runtime/results.js";
import {
  ToolStatus,
  type ToolCallOptions,
  type ToolInfo,
  type ToolManager,
  type ToolResult,
} from "../tools/types.js";
import type { AgentResult } from "../types/agent.js";

// The orchestrator, not each implementation, opens the span of every stage it calls: a user's
// own router, responder, memory or tool manager gets the same trace as the built-in ones. Each
// stage runs in a fork whose current span is the stage span, so spans an implementation opens
// itself nest under it.

/** Ends a stage span in error with the failure, and rethrows it. */
export function failStage(span: Span, err: unknown): never {
  span.end("error", messageOf(err));
  throw err;
}

// `router.classify` and `responder.format` are on every request: the orchestrator inlines their
// calls (see run.ts) and uses these two to check the answer and end the span.

/** Ends `router.classify` with candidates, best and score; a non-route is an INTERNAL error. */
export function endRouteSpan(span: Span, route: RouteResult): RouteResult {
  if (typeof route !== "object" || route === null || !Array.isArray(route.candidates)) {
    failStage(
      span,
      new NervaError(
        ErrorCode.INTERNAL,
        "The router's classify returned no route: it must resolve to { candidates: [...], best }.",
      ),
    );
  }
  span.setAttribute("candidates", route.candidates.length);
  const best = route.best;
  if (best != null) {
    span.setAttribute("best", best.name);
    span.setAttribute("score", best.score);
  }
  span.end("ok");
  return route;
}

/** The attributes `responder.format` starts with. */
export function formatAttributes(result: AgentResult, channel: Channel): Attributes {
  return {
    status: result.status,
    channel: typeof channel === "string" ? channel : channel.format,
  };
}

/** Ends `responder.format` with length and truncation; a non-response is an INTERNAL error. */
export function endFormatSpan(span: Span, response: FormattedResponse): FormattedResponse {
  if (typeof response !== "object" || response === null || typeof response.text !== "string") {
    failStage(
      span,
      new NervaError(
        ErrorCode.INTERNAL,
        "The responder's format returned no response: it must resolve to { text, status, handler, data, error, truncated }.",
      ),
    );
  }
  span.setAttribute("length", response.text.length);
  span.setAttribute("truncated", response.truncated === true);
  span.end("ok");
  return response;
}

/** `memory.recall`: the scope read, then how many items each tier gave. */
export async function recallStage(
  memory: Memory,
  query: string | MemoryQuery,
  ctx: ExecContext,
): Promise<MemoryRecall> {
  const scope =
    (typeof query === "object" && query !== null ? query.scope : undefined) ?? ctx.memoryScope;
  const span = ctx.startSpan("memory.recall", { scope });
  const scoped = ctx.fork({ span });
  try {
    const recall = await memory.recall(query, scoped);
    span.setAttribute("hot", recall?.hot?.length ?? 0);
    span.setAttribute("warm", recall?.warm?.length ?? 0);
    span.setAttribute("cold", recall?.cold?.length ?? 0);
    span.end("ok");
    return recall;
  } catch (err) {
    failStage(span, err);
  } finally {
    scoped.dispose();
  }
}

/** `memory.store`: scope and kind of the event. `agentName` scopes `agent` memory. */
export async function storeStage(
  memory: Memory,
  event: MemoryEventInit,
  ctx: ExecContext,
  agentName?: string,
): Promise<MemoryItem> {
  const e = (typeof event === "object" && event !== null ? event : {}) as Partial<MemoryEventInit>;
  const span = ctx.startSpan("memory.store", {
    scope: e.scope ?? ctx.memoryScope,
    kind: typeof e.kind === "string" ? e.kind : "turn",
  });
  const scoped = ctx.fork(agentName === undefined ? { span } : { span, agentName });
  try {
    const item = await memory.store(event, scoped);
    span.end("ok");
    return item;
  } catch (err) {
    failStage(span, err);
  } finally {
    scoped.dispose();
  }
}

/** `tools.discover`: how many tools the context may use. */
export async function discoverStage(
  tools: ToolManager,
  ctx: ExecContext,
): Promise<readonly ToolInfo[]> {
  const span = ctx.startSpan("tools.discover");
  const scoped = ctx.fork({ span });
  try {
    const infos = await tools.discover(scoped);
    span.setAttribute("tools", Array.isArray(infos) ? infos.length : 0);
    span.end("ok");
    return infos;
  } catch (err) {
    failStage(span, err);
  } finally {
    scoped.dispose();
  }
}

/** `tools.call`: the tool, then the result's status (an unsuccessful call ends in `error`). */
export async function callToolStage(
  tools: ToolManager,
  name: string,
  args: unknown,
  ctx: ExecContext,
  options?: ToolCallOptions,
): Promise<ToolResult> {
  const span = ctx.startSpan("tools.call", { tool: String(name) });
  // A model's id for this call (OpenTelemetry's gen_ai.tool.call.id), when a model asked for it.
  if (options?.callId !== undefined) span.setAttribute("gen_ai.tool.call.id", options.callId);
  const scoped = ctx.fork({ span });
  try {
    const result = await ctx.runInSpan(span, () => tools.call(name, args, scoped, options));
    const status = result?.status;
    span.setAttribute("status", String(status));
    if (status === ToolStatus.SUCCESS) span.end("ok");
    else span.end("error", result?.error ?? String(status));
    return result;
  } catch (err) {
    failStage(span, err);
  } finally {
    scoped.dispose();
  }
}
