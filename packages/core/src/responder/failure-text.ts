import { errorPolicyOf } from "../errors.js";
import type { AgentResult, JsonValue } from "../types/agent.js";
import { AgentStatus } from "../types/status.js";

/**
 * What a client may see of a result's `error`. An `error`/`timeout`/`wrong_handler` result's
 * `error` is operator text: a thrown exception's message, an exit code, a file path, the tail of a
 * worker's stderr — it stays on the `runtime.invoke` span and in the `AgentResult` the server
 * holds, and clients get a fixed sentence instead (the request id in the answer finds the rest).
 * Shown as they are: the `error` of a `needs_data`/`needs_credentials` result (it says what the
 * user must provide), and of a result whose `data.code` is a code whose message clients may read
 * (a typed refusal such as `POLICY_DENIED`, or a `NervaError` with a 4xx code the handler threw;
 * `ERROR_POLICY[code].expose`). Put anything else the user should read about a failure in the
 * result's `output`.
 *
 * @example
 * clientError(agentResult("a", { status: "error", error: "ECONNREFUSED /var/run/db.sock" })); // "the agent failed"
 */
export function clientError(result: Pick<AgentResult, "status" | "error" | "data">): string | null {
  const own = result.error?.trim() || null;
  if (
    own !== null &&
    result.status !== AgentStatus.SUCCESS &&
    errorPolicyOf(result.data.code)?.expose === true
  ) {
    return own;
  }
  switch (result.status) {
    case AgentStatus.SUCCESS:
      return null;
    case AgentStatus.NEEDS_DATA:
    case AgentStatus.NEEDS_CREDENTIALS:
      return own;
    case AgentStatus.TIMEOUT:
      return "no answer before the deadline";
    case AgentStatus.WRONG_HANDLER:
      return "no handler accepted it";
    default:
      return "the agent failed";
  }
}

/**
 * A result's `data` as a client may see it: without the `stderr` tail a subprocess or container
 * runtime adds to a failed result (operator text, like `error`).
 */
export function clientData(
  data: Readonly<Record<string, JsonValue>>,
): Readonly<Record<string, JsonValue>> {
  if (!("stderr" in data)) return data;
  const { stderr: _stderr, ...rest } = data;
  return rest;
}

/**
 * The line that makes a non-success result visible to the user, or `null` when the output
 * already says what is needed (a `needs_data`/`needs_credentials` result whose output asks for
 * it). Never `null` for `error`, `timeout` or `wrong_handler`, and never their operator text
 * (see {@link clientError}).
 *
 * @example
 * failureText(agentResult("a", { status: "timeout", error: "took 30 s" })); // "Timed out: no answer before the deadline"
 */
export function failureText(result: AgentResult): string | null {
  const detail = result.status === AgentStatus.SUCCESS ? null : clientError(result);
  switch (result.status) {
    case AgentStatus.SUCCESS:
      return null;
    case AgentStatus.ERROR:
      return `Error: ${detail}${end(detail)}`;
    case AgentStatus.TIMEOUT:
      return `Timed out: ${detail}${end(detail)}`;
    case AgentStatus.WRONG_HANDLER:
      return `Could not handle this request: ${detail}${end(detail)}`;
    case AgentStatus.NEEDS_DATA:
      if (detail !== null) return `More information is needed: ${detail}`;
      return result.output.trim() === "" ? "More information is needed to continue." : null;
    case AgentStatus.NEEDS_CREDENTIALS:
      if (detail !== null) return `Credentials are needed: ${detail}`;
      return result.output.trim() === "" ? "Credentials are needed to continue." : null;
    default:
      return `Failed (${String(result.status)}): ${detail}${end(detail)}`;
  }
}

/** A full stop after one of the fixed sentences; a typed error's own text keeps its punctuation. */
function end(detail: string | null): string {
  return detail !== null && /^[a-z]/.test(detail) && !/[.!?]$/.test(detail) ? "." : "";
}
