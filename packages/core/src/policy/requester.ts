import type { ExecContext } from "../context/exec-context.js";
import type { Approval } from "./types.js";

/**
 * Whether `ctx` is the requester an approval is bound to: the same user, or, for an approval
 * asked by an anonymous request, the same session of an anonymous request. Nobody else may use
 * it, hand it to `handleApproved` or (without `allowSelfApproval`) decide it.
 *
 * @example
 * if (!isRequester(approval, ctx)) throw new NervaError("NOT_FOUND", "No such approval.");
 */
export function isRequester(
  approval: Pick<Approval, "userId" | "sessionId">,
  ctx: ExecContext,
): boolean {
  if (approval.userId !== null) return approval.userId === ctx.userId;
  return ctx.userId === null && approval.sessionId !== null && approval.sessionId === ctx.sessionId;
}
