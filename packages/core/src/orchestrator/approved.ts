import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import { isRequester } from "../policy/requester.js";
import type { PolicyEngine } from "../policy/types.js";

/**
 * The message of approval `approvalId` once it is decided, for its requester only (the same
 * user, or the same session of an anonymous request). Rejects with APPROVAL_PENDING while it
 * waits, POLICY_DENIED when it was denied, NOT_FOUND when `ctx` is not its requester. A used or
 * expired approval gives the message too: sent again, it asks for a new approval.
 */
export async function approvedMessage(
  policy: PolicyEngine | null,
  approvalId: string,
  ctx: ExecContext,
): Promise<string> {
  if (policy === null || typeof policy.approval !== "function") {
    throw new NervaError(
      ErrorCode.INVALID_OPTIONS,
      "handleApproved needs a policy engine with approvals (options.policy, e.g. DeclarativePolicyEngine).",
      { issues: [{ path: "options.policy", message: "must implement approval(id, ctx)" }] },
    );
  }
  const approval = await policy.approval(approvalId, ctx);
  // `approval()` also answers approvers; only the requester may send the message again.
  if (approval === null || approval.kind !== "agent" || !isRequester(approval, ctx)) {
    throw new NervaError(
      ErrorCode.NOT_FOUND,
      `No approval "${approvalId}" for an agent request of this user or session. Tool approvals apply when the same request is sent again.`,
      { details: { approvalId } },
    );
  }
  if (approval.status === "pending") {
    throw new NervaError(ErrorCode.APPROVAL_PENDING, `Approval "${approvalId}" is still pending.`, {
      details: { approvalId, rule: approval.rule },
    });
  }
  if (approval.status === "denied") {
    throw new NervaError(
      ErrorCode.POLICY_DENIED,
      `Approval "${approvalId}" was denied${approval.note === null ? "" : `: ${approval.note}`}.`,
      { details: { approvalId, rule: approval.rule } },
    );
  }
  return approval.payload;
}
