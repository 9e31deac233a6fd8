import type { ExecContext } from "../context/exec-context.js";
import { checkContext } from "../runtime/guard.js";
import type { AgentResult } from "../types/agent.js";
import { clientData, clientError, failureText } from "./failure-text.js";
import type { Channel, FormattedResponse, Responder } from "./types.js";

/** `output`, then the failure line (if any) after a blank line. */
export function withFailure(output: string, failure: string | null): string {
  if (failure === null) return output;
  return output === "" ? failure : `${output}\n\n${failure}`;
}

/**
 * Sends output as the handler wrote it, whatever the channel: no markdown processing, no length
 * limit, chunks unchanged. A failed result still shows: its text ends with a line naming the
 * failure (e.g. `Error: upstream returned 502`), and `status`/`error` are kept.
 *
 * @example
 * const responder = new PassthroughResponder();
 * const response = await responder.format(result, "markdown", ctx); // response.text === result.output on success
 */
export class PassthroughResponder implements Responder {
  /** Formats without a span, event or I/O (see {@link Responder.spanless}). */
  readonly spanless: boolean = true;
  async format(
    result: AgentResult,
    _channel: Channel,
    ctx: ExecContext,
  ): Promise<FormattedResponse> {
    checkContext(ctx);
    return {
      text: withFailure(result.output, failureText(result)),
      status: result.status,
      handler: result.handler,
      data: clientData(result.data),
      error: clientError(result),
      truncated: false,
    };
  }

  formatChunk(chunk: string, _channel: Channel, _ctx: ExecContext): string {
    return chunk;
  }
}
