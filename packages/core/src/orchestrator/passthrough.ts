import type { ExecContext } from "../context/exec-context.js";
import type { FormattedResponse, Responder } from "../responder/types.js";
import type { AgentResult } from "../types/agent.js";
import { AgentStatus } from "../types/status.js";

/**
 * The orchestrator's responder when none is given: success text is the output unchanged; a
 * failure keeps any output and names the status and error, so it is never an empty text. Chunks
 * pass through unchanged.
 */
export const passthroughResponder: Responder = Object.freeze({
  async format(
    result: AgentResult,
    _channel: unknown,
    ctx: ExecContext,
  ): Promise<FormattedResponse> {
    const span = ctx.startSpan("responder.format", { responder: "passthrough" });
    const failure =
      result.status === AgentStatus.SUCCESS
        ? ""
        : `[${result.status}] ${result.error ?? "the handler did not succeed"}`;
    const text =
      failure === ""
        ? result.output
        : result.output === ""
          ? failure
          : `${result.output}\n${failure}`;
    span.end("ok");
    return Object.freeze({
      text,
      status: result.status,
      handler: result.handler,
      data: result.data,
      error: result.error,
      truncated: false,
    });
  },
  formatChunk: (chunk: string): string => chunk,
});
