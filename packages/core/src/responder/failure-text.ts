import type { AgentResult } from "../types/agent.js";
import { AgentStatus } from "../types/status.js";

/**
 * The line that makes a non-success result visible to the user, or `null` when the output
 * already says what is needed (a `needs_data`/`needs_credentials` result whose output asks for
 * it). Never `null` for `error`, `timeout` or `wrong_handler`.
 *
 * @example
 * failureText(agentResult("a", { status: "timeout", error: "took 30 s" })); // "Timed out: took 30 s"
 */
export function failureText(result: AgentResult): string | null {
  const detail = result.error?.trim() || null;
  switch (result.status) {
    case AgentStatus.SUCCESS:
      return null;
    case AgentStatus.ERROR:
      return `Error: ${detail ?? "the request failed without an error message."}`;
    case AgentStatus.TIMEOUT:
      return `Timed out: ${detail ?? "no answer before the deadline."}`;
    case AgentStatus.WRONG_HANDLER:
      return `Could not handle this request: ${detail ?? "no handler accepted it."}`;
    case AgentStatus.NEEDS_DATA:
      if (detail !== null) return `More information is needed: ${detail}`;
      return result.output.trim() === "" ? "More information is needed to continue." : null;
    case AgentStatus.NEEDS_CREDENTIALS:
      if (detail !== null) return `Credentials are needed: ${detail}`;
      return result.output.trim() === "" ? "Credentials are needed to continue." : null;
    default:
      return `Failed (${String(result.status)}): ${detail ?? "no details."}`;
  }
}
