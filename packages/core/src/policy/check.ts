import { ExecContext } from "../context/exec-context.js";
import { ErrorCode, isNervaError } from "../errors.js";
import { messageOf } from "../runtime/results.js";
import {
  Checkpoint,
  PolicyEffect,
  type PolicyAction,
  type PolicyDecision,
  type PolicyEngine,
} from "./types.js";

/**
 * The refusals of tool calls and delegations made while handlers ran (checkpoint
 * `during_execution`), oldest first: one list per request tree, created on the first refusal.
 * The orchestrator reads it to fail a request whose handler failed after such a refusal with the
 * refusal's code, whatever engine made it and whether or not the engine recorded anything.
 */
export const kRefusals = ExecContext.key<PolicyDecision[]>("nerva.refusals");

const newList = (): PolicyDecision[] => [];

/** Number of refusals recorded in `ctx`'s tree so far (no allocation when there is none). */
export function refusalCount(ctx: ExecContext): number {
  return ctx.local(kRefusals)?.length ?? 0;
}

const REFUSAL_CODES: ReadonlySet<unknown> = new Set<string>([
  ErrorCode.PERMISSION_DENIED,
  ErrorCode.POLICY_DENIED,
  ErrorCode.RATE_LIMITED,
  ErrorCode.BUDGET_EXCEEDED,
  ErrorCode.UNAUTHENTICATED,
]);

function failed(cp: Checkpoint, why: string, err?: unknown): PolicyDecision {
  // An engine whose shared state cannot be reached (a limit store on Redis that is away) refuses
  // as a 503 the client may retry, not as a 403 it should not.
  if (isNervaError(err) && err.code === ErrorCode.UNAVAILABLE) {
    const retry = (err.details as { retryAfterSeconds?: unknown } | undefined)?.retryAfterSeconds;
    return Object.freeze({
      effect: PolicyEffect.DENY,
      checkpoint: cp,
      code: ErrorCode.UNAVAILABLE,
      reason: err.message,
      rule: null,
      retryAfterSeconds: typeof retry === "number" ? retry : 1,
    });
  }
  return Object.freeze({
    effect: PolicyEffect.DENY,
    checkpoint: cp,
    code: ErrorCode.POLICY_DENIED,
    reason: `The policy failed (${why}), so the action is refused.`,
    rule: null,
  });
}

/**
 * A refusal as every engine's refusal is reported: the checkpoint it was asked at, a `deny`
 * code among the refusal codes (POLICY_DENIED otherwise), APPROVAL_PENDING for `pending`, and
 * only well-formed `retryAfterSeconds` / `approvalId`. A decision already in that form is
 * returned as it is. `null` when the value is not a decision at all.
 */
function normalize(d: unknown, cp: Checkpoint): PolicyDecision | null {
  if (typeof d !== "object" || d === null) return null;
  const v = d as Partial<Record<keyof PolicyDecision, unknown>>;
  const pending = v.effect === PolicyEffect.PENDING;
  if (!pending && v.effect !== PolicyEffect.DENY) return null;
  const code = pending
    ? ErrorCode.APPROVAL_PENDING
    : REFUSAL_CODES.has(v.code)
      ? (v.code as ErrorCode)
      : ErrorCode.POLICY_DENIED;
  const reason = typeof v.reason === "string" && v.reason !== "" ? v.reason : "Refused by policy.";
  const rule = typeof v.rule === "string" ? v.rule : null;
  const retry = v.retryAfterSeconds;
  const retryAfterSeconds =
    typeof retry === "number" && Number.isFinite(retry) && retry >= 0 ? retry : undefined;
  const approvalId =
    pending && typeof v.approvalId === "string" && v.approvalId !== "" ? v.approvalId : undefined;
  if (
    v.checkpoint === cp &&
    v.code === code &&
    v.reason === reason &&
    v.rule === rule &&
    v.retryAfterSeconds === retryAfterSeconds &&
    v.approvalId === approvalId
  ) {
    return d as PolicyDecision;
  }
  return Object.freeze({
    effect: pending ? PolicyEffect.PENDING : PolicyEffect.DENY,
    checkpoint: cp,
    code,
    reason,
    rule,
    ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }),
    ...(approvalId === undefined ? {} : { approvalId }),
  });
}

/**
 * Asks `policy` about `action`: `null` when allowed, else the refusal, normalised so that any
 * engine's refusal is reported the same way (see {@link normalize}). Fails closed: an engine
 * that throws or answers something that is not a decision refuses with POLICY_DENIED (with
 * UNAVAILABLE when it threw UNAVAILABLE: its state is out of reach, retry later), recorded as a
 * `policy.error` event. A refusal during execution is also added to {@link kRefusals}.
 */
export async function askPolicy(
  policy: PolicyEngine,
  action: PolicyAction,
  ctx: ExecContext,
): Promise<PolicyDecision | null> {
  const cp = action.checkpoint;
  let refused: PolicyDecision | null;
  try {
    const decision: unknown = await policy.evaluate(action, ctx);
    if ((decision as PolicyDecision | null)?.effect === PolicyEffect.ALLOW) return null;
    refused = normalize(decision, cp);
    if (refused === null) {
      const why = `it answered ${decision === null ? "null" : typeof decision}${typeof decision === "object" && decision !== null ? ` with effect ${String((decision as { effect?: unknown }).effect)}` : ""}, not a decision with effect allow, deny or pending`;
      ctx.event("policy.error", { checkpoint: cp, error: why });
      refused = failed(cp, why);
    }
  } catch (err) {
    ctx.event("policy.error", { checkpoint: cp, error: messageOf(err) });
    refused = failed(cp, messageOf(err), err);
  }
  if (cp === Checkpoint.DURING_EXECUTION) ctx.local(kRefusals, newList).push(refused);
  return refused;
}
