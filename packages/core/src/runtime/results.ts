import { ErrorCode, NervaError, messageOf } from "../errors.js";
import { DEFAULT_JSON_LIMITS, jsonLimitViolation } from "../internal/json-limits.js";
import { agentResult, type AgentResult } from "../types/agent.js";

export { messageOf } from "../errors.js";
import { AgentStatus } from "../types/status.js";

/** An ERROR result for `handler` with `message`. */
export function errorResult(handler: string, message: string): AgentResult {
  return agentResult(handler, { status: AgentStatus.ERROR, error: message });
}

/**
 * An ERROR result for something `handler` threw: its message as the (operator) error text and, for
 * a NervaError, its code as `data.code`, so clients are shown a typed error's message and nothing
 * else (see `clientError` in the responder).
 */
export function thrownResult(handler: string, err: unknown): AgentResult {
  if (err instanceof NervaError) {
    return agentResult(handler, {
      status: AgentStatus.ERROR,
      error: err.message,
      data: { code: err.code },
    });
  }
  return errorResult(handler, messageOf(err));
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

/**
 * `AgentResult.data` is one level below the result, which nests at most 64 levels in all, so it
 * fits a frame (65 levels) wherever it goes: back to the host, or to a worker in a
 * `delegate_result`.
 */
export const RESULT_DATA_LIMITS = Object.freeze({
  maxDepth: DEFAULT_JSON_LIMITS.maxDepth - 1,
  maxNodes: DEFAULT_JSON_LIMITS.maxNodes,
});

/**
 * Why `data` (the `data` of a result a handler produced) is too deep or too large to validate,
 * serialise or send across a process boundary, or `null` when it is fine. Iterative.
 */
export function resultDataViolation(data: unknown): string | null {
  return typeof data === "object" && data !== null
    ? jsonLimitViolation(data, RESULT_DATA_LIMITS)
    : null;
}
