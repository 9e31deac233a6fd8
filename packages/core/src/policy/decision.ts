import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import type { DelegationPolicy } from "../runtime/types.js";
import { askPolicy } from "./check.js";
import {
  Checkpoint,
  PolicyEffect,
  type PolicyAction,
  type PolicyDecision,
  type PolicyEngine,
} from "./types.js";

/** An `allow` decision. */
export function allowDecision(
  checkpoint: Checkpoint,
  reason: string,
  rule: string | null = null,
): PolicyDecision {
  return Object.freeze({ effect: PolicyEffect.ALLOW, checkpoint, code: null, reason, rule });
}

/** A `deny` decision carrying the error code to report. */
export function denyDecision(
  checkpoint: Checkpoint,
  code: ErrorCode,
  reason: string,
  rule: string | null,
  retryAfterSeconds?: number,
): PolicyDecision {
  return Object.freeze({
    effect: PolicyEffect.DENY,
    checkpoint,
    code,
    reason,
    rule,
    ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }),
  });
}

/** A `pending` decision waiting for approval `approvalId`. */
export function pendingDecision(
  checkpoint: Checkpoint,
  reason: string,
  rule: string,
  approvalId: string,
): PolicyDecision {
  return Object.freeze({
    effect: PolicyEffect.PENDING,
    checkpoint,
    code: ErrorCode.APPROVAL_PENDING,
    reason,
    rule,
    approvalId,
  });
}

/** Records `decision` as a `policy.decision` event on `ctx`. */
export function recordDecision(
  ctx: ExecContext,
  decision: PolicyDecision,
  action: PolicyAction,
): void {
  ctx.event("policy.decision", {
    checkpoint: decision.checkpoint,
    effect: decision.effect,
    code: decision.code ?? "",
    rule: decision.rule ?? "",
    reason: decision.reason,
    kind: action.kind ?? "",
    name: action.name ?? "",
    ...(decision.retryAfterSeconds === undefined
      ? {}
      : { retry_after_seconds: decision.retryAfterSeconds }),
    ...(decision.approvalId === undefined ? {} : { approval_id: decision.approvalId }),
  });
}

/**
 * The NervaError that reports a refused decision: its `code` (POLICY_DENIED, PERMISSION_DENIED,
 * RATE_LIMITED, BUDGET_EXCEEDED, APPROVAL_PENDING) and `details` (`retryAfterSeconds`,
 * `approvalId`, `rule`, `checkpoint`) are what HTTP bridges map to 403/429/202.
 *
 * @example
 * const decision = await policy.evaluate({ checkpoint: "before_route", message }, ctx);
 * if (decision.effect !== "allow") throw decisionError(decision);
 */
export function decisionError(decision: PolicyDecision): NervaError {
  const code =
    decision.code ??
    (decision.effect === PolicyEffect.PENDING
      ? ErrorCode.APPROVAL_PENDING
      : ErrorCode.POLICY_DENIED);
  return new NervaError(code, decision.reason, {
    details: {
      checkpoint: decision.checkpoint,
      rule: decision.rule,
      ...(decision.retryAfterSeconds === undefined
        ? {}
        : { retryAfterSeconds: decision.retryAfterSeconds }),
      ...(decision.approvalId === undefined ? {} : { approvalId: decision.approvalId }),
    },
  });
}

/**
 * A runtime `delegationPolicy` that asks `engine` (checkpoint `during_execution`, kind
 * `delegate`) before each `runtime.delegate`, so delegations made directly on the runtime are
 * governed too. An engine that throws refuses the delegation; a refusal is recorded for the
 * request like the kit's (so the orchestrator reports it when the handler then fails).
 *
 * @example
 * const runtime = new InProcessRuntime({ delegationPolicy: policyDelegation(policy) });
 */
export function policyDelegation(engine: PolicyEngine): DelegationPolicy {
  return async ({ to, input, ctx }) => {
    const refused = await askPolicy(
      engine,
      {
        checkpoint: Checkpoint.DURING_EXECUTION,
        kind: "delegate",
        name: to,
        message: input.message,
      },
      ctx,
    );
    if (refused === null) return true;
    const tail = refused.approvalId === undefined ? "" : ` (approval ${refused.approvalId})`;
    return { allow: false, reason: `${refused.code}: ${refused.reason}${tail}` };
  };
}
