import type { ExecContext } from "../context/exec-context.js";
import type { AgentInputInit, AgentResult } from "../types/agent.js";
import { AgentStatus } from "../types/status.js";
import { checkInvokeArgs } from "./guard.js";
import { errorResult, messageOf } from "./results.js";
import type { AgentRuntime, DelegationPolicy } from "./types.js";

/** Delegation settings shared by every runtime. */
export interface DelegationOptions {
  /** Deepest allowed child context (root = 0). Default 5. */
  readonly maxDelegationDepth: number;
  readonly delegationPolicy?: DelegationPolicy | undefined;
}

async function refusal(
  options: DelegationOptions,
  from: string | null,
  to: string,
  parentCtx: ExecContext,
  input: Parameters<DelegationPolicy>[0]["input"],
): Promise<string | null> {
  const path = parentCtx.agentPath().reverse();
  const route = [...path, to].join(" → ");
  if (parentCtx.depth + 1 > options.maxDelegationDepth) {
    return `Delegation refused: depth limit of ${options.maxDelegationDepth} reached (${route}). Raise maxDelegationDepth or flatten the agent graph.`;
  }
  if (path.includes(to)) {
    return `Delegation refused: cycle ${route} ("${to}" is already running in this request).`;
  }
  if (!parentCtx.permissions.canUseAgent(to)) {
    return `Delegation refused: permission denied, this context may not use agent "${to}".`;
  }
  if (options.delegationPolicy !== undefined) {
    try {
      const verdict = await options.delegationPolicy({ from, to, input, ctx: parentCtx });
      const allow = typeof verdict === "boolean" ? verdict : verdict?.allow === true;
      if (!allow) {
        const why = typeof verdict === "object" && verdict?.reason ? `: ${verdict.reason}` : "";
        return `Delegation refused by policy${why}.`;
      }
    } catch (err) {
      return `Delegation refused: the delegation policy failed (${messageOf(err)}), so the call is denied.`;
    }
  }
  return null;
}

/**
 * `delegate` for any runtime: checks depth, cycles, `canUseAgent` and the policy hook (each
 * refusal is an ERROR result and a `delegate.refused` event), then invokes `handler` on the same
 * runtime in a child context whose spans nest under a `delegate` span.
 */
export async function runDelegate(
  runtime: AgentRuntime,
  options: DelegationOptions,
  handler: string,
  input: AgentInputInit,
  parentCtx: ExecContext,
): Promise<AgentResult> {
  const agentInput = checkInvokeArgs(handler, input, parentCtx);
  const from = parentCtx.agentName;
  const span = parentCtx.startSpan("delegate", { handler, from: from ?? "" });
  const refused = await refusal(options, from, handler, parentCtx, agentInput);
  if (refused !== null) {
    parentCtx.event("delegate.refused", { from: from ?? "", to: handler, reason: refused });
    span.end("error", refused);
    return errorResult(handler, refused);
  }
  const child = parentCtx.child(handler, { span });
  try {
    const result = await runtime.invoke(handler, agentInput, child);
    if (result.status === AgentStatus.SUCCESS) span.end("ok");
    else span.end("error", result.error ?? result.status);
    return result;
  } finally {
    child.dispose();
  }
}
