// PolicyDecision of Nerva's published spec, as a wire schema with its converters to and from
// this implementation's PolicyDecision (effect allow | deny | pending, with a code and a rule).
import { z } from "zod";
import { ErrorCode, parseOrThrow } from "../errors.js";
import { Checkpoint, PolicyEffect, type PolicyDecision } from "../policy/types.js";

/** The codes a decision reports (see {@link PolicyDecision}). */
const DECISION_CODES = [
  ErrorCode.PERMISSION_DENIED,
  ErrorCode.POLICY_DENIED,
  ErrorCode.RATE_LIMITED,
  ErrorCode.BUDGET_EXCEEDED,
  ErrorCode.APPROVAL_PENDING,
] as const;
const CHECKPOINTS = Object.values(Checkpoint) as [Checkpoint, ...Checkpoint[]];

/**
 * Wire schema of PolicyDecision: the fields of Nerva's published spec plus optional extras this
 * implementation writes (`checkpoint`, `code`, `rule`, `retry_after_seconds`, `approval_id`).
 * Strict, as for Permissions: ignoring a misspelt `require_approval` would let an action through
 * that waits for a human.
 */
export const PolicyDecisionSchema = z
  .object({
    allowed: z.boolean().describe("Whether the action may proceed (see require_approval)."),
    reason: z
      .string()
      .nullable()
      .default(null)
      .describe("Why it was denied, or what decided; null when there is nothing to say."),
    require_approval: z
      .boolean()
      .default(false)
      .describe("A human must approve before the action proceeds, whatever allowed says."),
    approvers: z
      .array(z.string().min(1).max(256))
      .nullable()
      .default(null)
      .describe("Who may approve; null when no approval is needed or it is not said."),
    budget_remaining: z
      .number()
      .nullable()
      .default(null)
      .describe("Budget left after this action; null when no budget is tracked."),
    checkpoint: z
      .enum(CHECKPOINTS)
      .optional()
      .describe("Extra: where it was evaluated (before_route, before_invoke, during_execution)."),
    code: z
      .enum(DECISION_CODES)
      .nullable()
      .optional()
      .describe("Extra: the error code a refusal reports; null when allowed."),
    rule: z
      .string()
      .min(1)
      .max(256)
      .nullable()
      .optional()
      .describe("Extra: the rule, limit, budget or approval rule that decided."),
    retry_after_seconds: z
      .number()
      .nonnegative()
      .optional()
      .describe("Extra: seconds until trying again can succeed (rate limits, budgets)."),
    approval_id: z
      .string()
      .min(1)
      .max(256)
      .optional()
      .describe("Extra: the approval a pending decision waits for."),
  })
  .strict()
  .meta({ id: "PolicyDecision", description: "The outcome of a policy evaluation." });
export type PolicyDecisionWire = z.output<typeof PolicyDecisionSchema>;

/**
 * A {@link PolicyDecision} as read from the wire: `approvers` and `budgetRemaining` are present
 * only when the sender said them (this implementation's engines do not).
 */
export type ReceivedPolicyDecision = PolicyDecision & {
  readonly approvers?: readonly string[];
  readonly budgetRemaining?: number;
};

/**
 * A decision on the wire: `allowed` is true only for `allow`; `pending` is `allowed: false` with
 * `require_approval: true`, so a reader that looks only at `allowed` still stops. The reason is
 * always written. Throws `NervaError` INVALID_INPUT for a code a decision does not carry.
 *
 * @example
 * const decision = await policy.evaluate({ checkpoint: "before_route", message: "hi" }, ctx);
 * const wire = policyDecisionToWire(decision); // { allowed: true, reason: "within rate limits", ... }
 */
export function policyDecisionToWire(decision: ReceivedPolicyDecision): PolicyDecisionWire {
  const wire = {
    allowed: decision.effect === PolicyEffect.ALLOW,
    reason: decision.reason,
    require_approval: decision.effect === PolicyEffect.PENDING,
    approvers: decision.approvers === undefined ? null : [...decision.approvers],
    budget_remaining: decision.budgetRemaining ?? null,
    checkpoint: decision.checkpoint,
    code: decision.code,
    rule: decision.rule,
    ...(decision.retryAfterSeconds === undefined
      ? {}
      : { retry_after_seconds: decision.retryAfterSeconds }),
    ...(decision.approvalId === undefined ? {} : { approval_id: decision.approvalId }),
  };
  return parseOrThrow(
    PolicyDecisionSchema,
    wire,
    ErrorCode.INVALID_INPUT,
    "decision",
    `A decision's code is null or one of ${DECISION_CODES.join(", ")}.`,
  );
}

const DEFAULT_REASON: Readonly<Record<PolicyEffect, string>> = {
  allow: "",
  deny: "denied by policy",
  pending: "approval required",
};

/**
 * Reads a PolicyDecision, failing closed: `require_approval: true` is `pending` whatever
 * `allowed` says (Nerva's Python engine writes approvals as `allowed: true`), `allowed: false` is
 * `deny`, only `allowed: true` alone is `allow`. A denial without a `code` extra reports
 * POLICY_DENIED; a missing reason reads as "denied by policy" or "approval required".
 * `checkpoint` is where the caller asked, used when the payload does not say. Throws
 * `NervaError` INVALID_INPUT naming the bad field.
 *
 * @example
 * const decision = policyDecisionFromWire({ allowed: false, reason: "rate limit exceeded" }, "before_route");
 * if (decision.effect !== "allow") throw decisionError(decision);
 */
export function policyDecisionFromWire(
  wire: unknown,
  checkpoint: Checkpoint,
): ReceivedPolicyDecision {
  const w = parseOrThrow(
    PolicyDecisionSchema,
    wire,
    ErrorCode.INVALID_INPUT,
    "decision",
    "Send { allowed: boolean, reason?: string | null, require_approval?: boolean, approvers?: string[] | null, budget_remaining?: number | null }.",
  );
  const effect = w.require_approval
    ? PolicyEffect.PENDING
    : w.allowed
      ? PolicyEffect.ALLOW
      : PolicyEffect.DENY;
  const code =
    effect === PolicyEffect.ALLOW
      ? null
      : effect === PolicyEffect.PENDING
        ? ErrorCode.APPROVAL_PENDING
        : w.code !== undefined && w.code !== null && w.code !== ErrorCode.APPROVAL_PENDING
          ? w.code
          : ErrorCode.POLICY_DENIED;
  return Object.freeze({
    effect,
    checkpoint: w.checkpoint ?? checkpoint,
    code,
    reason: w.reason ?? DEFAULT_REASON[effect],
    rule: w.rule ?? null,
    ...(effect === PolicyEffect.DENY && w.retry_after_seconds !== undefined
      ? { retryAfterSeconds: w.retry_after_seconds }
      : {}),
    ...(effect === PolicyEffect.PENDING && w.approval_id !== undefined
      ? { approvalId: w.approval_id }
      : {}),
    ...(w.approvers === null ? {} : { approvers: Object.freeze(w.approvers) }),
    ...(w.budget_remaining === null ? {} : { budgetRemaining: w.budget_remaining }),
  });
}
