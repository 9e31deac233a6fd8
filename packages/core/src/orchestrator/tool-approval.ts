// A tool call, made through the kit inside a durable run, that the policy gates with an approval
// its requester may give themselves (`allowSelfApproval` and one of the rule's approver roles):
// instead of failing the call, the run pauses for the requester's own answer (a chat shows it as
// the AI SDK's tool approval request) and, once answered, decides the policy's approval with that
// answer and asks the policy again. The policy stays the judge: whatever the answer, the call
// runs only if the policy then allows it.
import { z } from "zod";
import type { ExecContext } from "../context/exec-context.js";
import { kRunAsk } from "../context/run-slot.js";
import { PolicyEffect, type PolicyDecision, type PolicyEngine } from "../policy/types.js";
import type { JsonValue } from "../types/agent.js";

/** The pause key (a derived `$` key) of the approval of a tool call; the approval id follows. */
export const TOOL_APPROVAL_KEY = "$tool-approval/";

const AnswerSchema = z
  .object({ decision: z.enum(["approve", "deny"]), note: z.string().max(1000).optional() })
  .strict();

/** What the requester answered: `{ decision, note? }`; anything else denies (fail closed). */
export type ToolApprovalAnswer = z.infer<typeof AnswerSchema>;

/**
 * The id of the approval `refused` waits for when `ctx`'s user may give it in this run: the
 * refusal is `pending`, the engine can show and decide approvals, the request runs in a durable
 * run, and the approval is `ctx`'s own, pending, self-approvable, with `ctx` holding one of its
 * approver roles. `null` otherwise (the call then fails as before: APPROVAL_PENDING).
 */
export async function selfApprovable(
  policy: PolicyEngine,
  refused: PolicyDecision,
  ctx: ExecContext,
): Promise<string | null> {
  const id = refused.approvalId;
  if (refused.effect !== PolicyEffect.PENDING || id === undefined) return null;
  if (ctx.userId === null || ctx.local(kRunAsk) === undefined) return null;
  if (typeof policy.approval !== "function" || typeof policy.decide !== "function") return null;
  try {
    const a = await policy.approval(id, ctx);
    if (a?.status !== "pending" || !a.allowSelfApproval || a.userId !== ctx.userId) return null;
    return a.approverRoles.some((r) => ctx.permissions.hasRole(r)) ? a.id : null;
  } catch {
    // An engine that cannot show its approval: the call fails as a plain pending one.
    return null;
  }
}

/**
 * Pauses the run for the requester's answer to approval `approvalId` of tool call `toolCallId`
 * (the first time: throws and unwinds the handler), then decides the approval with it. Returns
 * the answer; the caller asks the policy again. A `decide` that refuses (the answer came too
 * late, the roles changed) is not an error here: the policy's next answer says what happens.
 */
export async function answerToolApproval(
  policy: PolicyEngine,
  ctx: ExecContext,
  call: {
    readonly approvalId: string;
    readonly toolCallId: string;
    readonly tool: string;
    readonly input?: JsonValue;
  },
): Promise<ToolApprovalAnswer> {
  const ask = ctx.local(kRunAsk);
  const user = ctx.userId;
  if (ask === undefined || user === null || policy.decide === undefined) {
    return { decision: "deny", note: "this request cannot answer approvals" };
  }
  const raw = await ask(`${TOOL_APPROVAL_KEY}${call.approvalId}`, {
    kind: "approval",
    prompt: `Run tool "${call.tool}"?`,
    data: {
      approvalId: call.approvalId,
      toolCallId: call.toolCallId,
      tool: call.tool,
      ...(call.input === undefined ? {} : { input: call.input }),
    },
    answeredBy: { users: [user] },
  });
  const parsed = AnswerSchema.safeParse(raw);
  const answer: ToolApprovalAnswer = parsed.success
    ? parsed.data
    : { decision: "deny", note: "the answer was not a decision" };
  try {
    await policy.decide(call.approvalId, answer, ctx);
  } catch {
    // Already decided (an earlier execution of this run did it), expired or refused: the
    // policy, asked again by the caller, says whether the call may run.
  }
  return answer;
}
