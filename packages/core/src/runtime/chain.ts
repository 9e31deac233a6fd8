import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import {
  ValidatedInput,
  type AgentInput,
  type AgentInputInit,
  type AgentResult,
} from "../types/agent.js";
import { AgentStatus } from "../types/status.js";
import { checkInvokeArgs } from "./guard.js";
import type { AgentRuntime } from "./types.js";

/**
 * `invokeChain` for any runtime: each handler's output becomes the next handler's message (args,
 * tools and history carry over); the first non-success result is returned at once. Only the last
 * step writes to `ctx.stream`, so a client sees the answer, not the intermediate steps.
 */
export async function runChain(
  runtime: AgentRuntime,
  handlers: readonly string[],
  input: AgentInputInit,
  ctx: ExecContext,
): Promise<AgentResult> {
  if (!Array.isArray(handlers) || handlers.length === 0) {
    throw new NervaError(
      ErrorCode.EMPTY_CHAIN,
      'Invalid handlers: invokeChain needs at least one handler name, e.g. invokeChain(["extract", "format"], input, ctx).',
      { issues: [{ path: "handlers", message: "must be a non-empty array of handler names" }] },
    );
  }
  let step: AgentInput = checkInvokeArgs(handlers[0], input, ctx);
  for (const name of handlers) checkInvokeArgs(name, step, ctx);
  const span = ctx.startSpan("runtime.chain", { handlers: handlers.join(" → ") });
  let result: AgentResult | undefined;
  for (let i = 0; i < handlers.length; i++) {
    const last = i === handlers.length - 1;
    const stepCtx = ctx.fork({ span, ...(last ? {} : { stream: null }) });
    try {
      result = await runtime.invoke(handlers[i] as string, step, stepCtx);
    } finally {
      stepCtx.dispose();
    }
    if (result.status !== AgentStatus.SUCCESS) {
      span.setAttribute("stopped_at", result.handler);
      span.end("error", result.error ?? result.status);
      return result;
    }
    step = new ValidatedInput(result.output, step.args, step.tools, step.history);
  }
  span.end("ok");
  return result as AgentResult;
}
