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

/** Status of an approval request. */
export const ApprovalStatus = {
  PENDING: "pending",
  APPROVED: "approved",
  DENIED: "denied",
} as const;
export type ApprovalStatus = (typeof ApprovalStatus)[keyof typeof ApprovalStatus];

/** A request for a human to allow one specific action (same kind, name, user and payload). */
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
  /** An approval allows one attempt; a decision is reported once. */
  readonly consumed: boolean;
}

/**
 * Where approvals live. `claim` must be atomic: of two concurrent attempts, only one consumes an
 * approval.
 *
 * @example
 * const engine = new DeclarativePolicyEngine(doc, { approvals: new InMemoryApprovalStore() });
 */
export interface ApprovalStore {
  create(approval: Approval): Promise<void>;
  get(id: string): Promise<Approval | null>;
  /** The newest approval with this fingerprint that is unexpired and not consumed, if any. */
  findOpen(fingerprint: string, now: number): Promise<Approval | null>;
  /** Sets status, decider and note of a pending approval; returns it, or `null` if not pending. */
  decide(
    id: string,
    status: "approved" | "denied",
    by: string | null,
    note: string | null,
    now: number,
  ): Promise<Approval | null>;
  /** Marks a decided approval consumed; `false` when someone else already did. */
  claim(id: string): Promise<boolean>;
  list(filter?: { status?: ApprovalStatus; userId?: string }): Promise<Approval[]>;
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
   * orchestrator's `resume` needs it.
   */
  approval?(id: string, ctx: ExecContext): Promise<Approval | null>;
}
