import { ErrorCode, NervaError } from "../../errors.js";
import { askPolicy } from "../../policy/check.js";
import { Checkpoint, type PolicyEngine } from "../../policy/types.js";
import type { NodeContext } from "./types.js";

/**
 * Where the context of a node visit keeps its graph host's policy. A symbol rather than a field
 * of NodeContext: the executor sets it, agentNode reads it, and a context built anywhere else
 * (a test's own) has none, so only the permissions apply to it.
 */
export const kNodePolicy: unique symbol = Symbol("nerva.graph.nodePolicy");

/**
 * Checks that the node's context may invoke agent `handler`: its permissions, then the graph
 * runtime's policy (`before_invoke`, kind `agent`; a policy that throws refuses). Throws
 * PERMISSION_DENIED or the policy's code.
 */
export async function authorizeAgent(
  ctx: NodeContext,
  handler: string,
  message: string,
): Promise<void> {
  if (!ctx.exec.permissions.canUseAgent(handler)) {
    throw new NervaError(
      ErrorCode.PERMISSION_DENIED,
      `The run's permissions do not allow agent "${handler}" (node "${ctx.nodeId}").`,
    );
  }
  const policy = (ctx as { readonly [kNodePolicy]?: PolicyEngine | null })[kNodePolicy] ?? null;
  const refused =
    policy === null
      ? null
      : await askPolicy(
          policy,
          { checkpoint: Checkpoint.BEFORE_INVOKE, kind: "agent", name: handler, message },
          ctx.exec,
        );
  if (refused !== null) {
    throw new NervaError(
      refused.code ?? ErrorCode.POLICY_DENIED,
      `The policy refused agent "${handler}": ${refused.reason}`,
    );
  }
}
