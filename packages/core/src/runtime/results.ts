import type { NervaError } from "../errors.js";
import { ErrorCode } from "../errors.js";
import { agentResult, type AgentResult } from "../types/agent.js";

export { messageOf } from "../errors.js";
import { AgentStatus } from "../types/status.js";

/** An ERROR result for `handler` with `message`. */
export function errorResult(handler: string, message: string): AgentResult {
  return agentResult(handler, { status: AgentStatus.ERROR, error: message });
}

/** The result of a handler whose context ended: TIMEOUT for a deadline, ERROR for a cancel. */
export function endedResult(handler: string, reason: NervaError, startedAtMs: number): AgentResult {
  if (reason.code === ErrorCode.TIMEOUT) {
    return agentResult(handler, {
      status: AgentStatus.TIMEOUT,
      error: `Handler "${handler}" timed out after ${Math.round(Date.now() - startedAtMs)} ms.`,
    });
  }
  return errorResult(handler, `Handler "${handler}" was cancelled: ${reason.message}`);
}
