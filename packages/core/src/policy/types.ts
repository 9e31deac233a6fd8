import type { ExecContext } from "../context/exec-context.js";
import type { ErrorCode } from "../errors.js";
import type { TokenUsage } from "../types/usage.js";

/**
 * Where in a request a policy is evaluated (the Architecture's three checkpoints).
 *
 * @example
 * await policy.evaluate({ checkpoint: Checkpoint.BEFORE_ROUTE, message }, ctx);
 */
export const Checkpoint = {
  /** Once per request, before the router runs: per-user rate limits. */
  BEFORE_ROUTE: "before_route",
  /** Before a handler runs: permissions, rules, approvals, per-handler rate limits, budgets. */
  BEFORE_INVOKE: "before_invoke",
  /** On each tool call and delegation while a handler runs: the same, with budgets charged so far. */
  DURING_EXECUTION: "during_execution",
} as const;
export type Checkpoint = (typeof Checkpoint)[keyof typeof Checkpoint];

/**
 * What is being attempted. `before_route` needs `message`; the others need `kind` and `name`
 * (`message` for agents and delegations, `args` for tools). Kind `model` is a model step of a
 * handler (`name` is the model, e.g. `openai/gpt-4o-mini`), asked during execution so that a
 * budget exhausted by earlier steps stops the next one.
 *
 * @example
 * const action: PolicyAction = { checkpoint: "during_execution", kind: "tool", name: "refund", args: { amount: 30 } };
 */
export interface PolicyAction {
  readonly checkpoint: Checkpoint;
  readonly kind?: "agent" | "tool" | "delegate" | "model";
  readonly name?: string;
  readonly message?: string;
  readonly args?: unknown;
}

/** The outcome of an evaluation. */
export const PolicyEffect = { ALLOW: "allow", DENY: "deny", PENDING: "pending" } as const;
export type PolicyEffect = (typeof PolicyEffect)[keyof typeof PolicyEffect];

/**
 * A policy's answer. `deny` carries the error code to report (PERMISSION_DENIED, POLICY_DENIED,
 * RATE_LIMITED, BUDGET_EXCEEDED); `pending` carries the approval to wait for.
 *
 * @example
 * const decision = await policy.evaluate(action, ctx);
 * if (decision.effect !== "allow") throw decisionError(decision);
 */
export interface PolicyDecision {
  readonly effect: PolicyEffect;
  readonly checkpoint: Checkpoint;
  /** `null` when allowed. */
  readonly code: ErrorCode | null;
  readonly reason: string;
  /** Name of the rule, limit, budget or approval rule that decided (`null` for the default). */
  readonly rule: string | null;
  /** RATE_LIMITED and BUDGET_EXCEEDED: when trying again can succeed. */
  readonly retryAfterSeconds?: number;
  /** `pending`: the approval to decide. */
  readonly approvalId?: string;
}

/**
 * Where an approval is: `pending` (paused, waiting for an approver), `approved` or `denied`
 * (answered, not yet used by its requester), `used` (its requester's attempt used it), `expired`
 * (not decided or not used in time).
 */
export const ApprovalStatus = {
  PENDING: "pending",
  APPROVED: "approved",
  DENIED: "denied",
  USED: "used",
  EXPIRED: "expired",
} as const;
export type ApprovalStatus = (typeof ApprovalStatus)[keyof typeof ApprovalStatus];

/**
 * A request for a human to allow one specific action (same kind, name, user and payload), as a
 * policy engine shows it. With DeclarativePolicyEngine it is a paused run of its approvals
 * queue: `id` is the run id, answered with `queue.resume(id, { decision }, { ctx })`.
 *
 * @example
 * const approval = await policy.approval!(approvalId, requesterCtx);
 * if (approval?.status === "pending") console.log(approval.rule, approval.expiresAt);
 */
export interface Approval {
  readonly id: string;
  readonly status: ApprovalStatus;
  /** The approval rule that asked for it. */
  readonly rule: string;
  readonly kind: "agent" | "tool";
  readonly name: string;
  readonly userId: string | null;
  readonly sessionId: string | null;
  /** The gated message (agents) or the JSON of the arguments (tools). */
  readonly payload: string;
  /** Roles allowed to decide. */
  readonly approverRoles: readonly string[];
  readonly allowSelfApproval: boolean;
  /** Hash of kind, name, identity and payload: what a later attempt must match to proceed. */
  readonly fingerprint: string;
  /** Epoch milliseconds. */
  readonly createdAt: number;
  readonly expiresAt: number;
  readonly decidedAt: number | null;
  readonly decidedBy: string | null;
  readonly note: string | null;
}

/**
 * Decides whether an action may proceed, at the three checkpoints. Implementations record each
 * decision as a `policy.decision` event on the context. A policy that throws denies: callers
 * must treat a rejection as a refusal.
 *
 * @example
 * const decision = await policy.evaluate({ checkpoint: "before_route", message: "hi" }, ctx);
 */
export interface PolicyEngine {
  evaluate(action: PolicyAction, ctx: ExecContext): Promise<PolicyDecision>;
  /** Charges a finished request's real token usage to the user's budgets. Call once per request. */
  charge(usage: TokenUsage, ctx: ExecContext): Promise<void>;
  /**
   * Optional: the approval `id` if `ctx` is its requester or may decide it, else `null`. The
   * orchestrator's `handleApproved` needs it.
   */
  approval?(id: string, ctx: ExecContext): Promise<Approval | null>;
  /**
   * Optional: answers the approval `id` for the approver `ctx` (PERMISSION_DENIED when `ctx` may
   * not decide it, INVALID_STATE once decided or expired) and returns it. The kit needs it (with
   * `approval`) to let a chat's user answer a tool call's approval they may give themselves.
   */
  decide?(
    id: string,
    answer: { readonly decision: "approve" | "deny"; readonly note?: string },
    ctx: ExecContext,
  ): Promise<Approval | null>;
}
