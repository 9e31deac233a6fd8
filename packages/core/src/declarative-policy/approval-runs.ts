// How a policy approval is written as a run of the approvals queue, and read back. The run's
// input holds what the approval is about (its message is the gated payload, its args the rule,
// target, fingerprint and expiry), its context the requester's identity, its pause what it waits
// for; once answered, the store holds the decision under the pause key, and the attempt that uses
// it ends the run with the decision as its result.
import type { ExecContext } from "../context/exec-context.js";
import type { PolicyDocument } from "../policy/document.js";
import type { Approval, ApprovalStatus } from "../policy/types.js";
import {
  APPROVAL_ANSWER_JSON_SCHEMA,
  APPROVAL_KEY,
  type ApprovalDecision,
} from "../runs/approval-answer.js";
import { newRunId } from "../runs/run-queue.js";
import type { NewRun } from "../runs/store.js";
import { RunStatus, type RunRecord } from "../runs/types.js";

type Rule = PolicyDocument["approvals"][number];

/** What a new approval is about. */
export interface ApprovalAsk {
  readonly rule: Rule;
  readonly kind: "agent" | "tool";
  readonly name: string;
  readonly payload: string;
  readonly fingerprint: string;
  readonly now: number;
}

const PREVIEW = 200;

/** The new run of an approval asked by `ctx` on queue `queue`: created paused. */
export function approvalRun(queue: string, ask: ApprovalAsk, ctx: ExecContext): NewRun {
  const { rule, kind, name, payload, fingerprint, now } = ask;
  const expiresAt = now + rule.ttlSeconds * 1000;
  const what = `${kind === "tool" ? "Tool" : "Agent"} "${name}"`;
  const preview = payload.length > PREVIEW ? `${payload.slice(0, PREVIEW)}…` : payload;
  const requester =
    ctx.userId !== null
      ? { exceptUsers: [ctx.userId] }
      : { exceptSessions: [ctx.sessionId as string] };
  return {
    id: newRunId(),
    queue,
    handlers: [name],
    input: {
      message: payload,
      args: {
        rule: rule.name,
        kind,
        name,
        fingerprint,
        expiresAt: String(expiresAt),
        approverRoles: JSON.stringify(rule.approverRoles),
        allowSelfApproval: String(rule.allowSelfApproval),
      },
      tools: [],
      history: [],
    },
    retry: {
      maxAttempts: 1,
      initialDelaySeconds: 0,
      backoffFactor: 1,
      maxDelaySeconds: 0,
      jitter: 0,
    },
    maxReclaims: 0,
    priority: 0,
    timeoutSeconds: null,
    idempotencyKey: null,
    context: { ...ctx.toWire(), cancelled: false },
    delaySeconds: 0,
    pause: {
      key: APPROVAL_KEY,
      prompt: `${what} needs approval (rule "${rule.name}"): ${preview}`,
      kind: "approval",
      data: {
        rule: rule.name,
        kind,
        name,
        payload: preview,
        expiresAt,
        schema: APPROVAL_ANSWER_JSON_SCHEMA,
      },
      answeredBy: {
        roles: [...rule.approverRoles],
        ...(rule.allowSelfApproval ? {} : requester),
      },
    },
  };
}

/** Whether `run` is an approval this module wrote. */
export function isApprovalRun(run: RunRecord): boolean {
  const a = run.input.args;
  return (
    typeof a["fingerprint"] === "string" &&
    typeof a["rule"] === "string" &&
    (a["kind"] === "agent" || a["kind"] === "tool")
  );
}

/** The decision recorded as JSON text, or `null` when there is none or it is malformed. */
export function parseDecision(text: string | undefined): ApprovalDecision | null {
  if (text === undefined) return null;
  try {
    const d = JSON.parse(text) as Partial<ApprovalDecision> | null;
    if (d === null || (d.decision !== "approve" && d.decision !== "deny")) return null;
    return {
      decision: d.decision,
      note: typeof d.note === "string" ? d.note : null,
      decidedBy: typeof d.decidedBy === "string" ? d.decidedBy : null,
      decidedAt: typeof d.decidedAt === "number" ? d.decidedAt : 0,
    };
  } catch {
    return null;
  }
}

/** When `run` (an approval) expires, epoch ms. */
export function expiresAtOf(run: RunRecord): number {
  return Number(run.input.args["expiresAt"]);
}

/**
 * The approval `run` shows at `now`; `decision` is the answer when it is answered (read from
 * the store) or the one its result recorded once used.
 */
export function approvalOf(
  run: RunRecord,
  decision: ApprovalDecision | null,
  now: number,
): Approval {
  const a = run.input.args;
  const expiresAt = expiresAtOf(run);
  const recorded = decision ?? parseDecision(JSON.stringify(run.result?.data ?? null));
  let status: ApprovalStatus;
  if (run.status === RunStatus.SUCCEEDED) status = "used";
  else if (now >= expiresAt || run.status !== RunStatus.PAUSED) {
    status =
      run.status === RunStatus.PENDING && now < expiresAt
        ? recorded?.decision === "approve"
          ? "approved"
          : "denied"
        : "expired";
  } else status = "pending";
  return Object.freeze({
    id: run.id,
    status,
    rule: a["rule"] ?? "",
    kind: a["kind"] === "tool" ? "tool" : "agent",
    name: a["name"] ?? "",
    userId: run.context.user_id,
    sessionId: run.context.session_id,
    payload: run.input.message,
    approverRoles: Object.freeze(JSON.parse(a["approverRoles"] ?? "[]") as string[]),
    allowSelfApproval: a["allowSelfApproval"] === "true",
    fingerprint: a["fingerprint"] ?? "",
    createdAt: run.createdAt,
    expiresAt,
    decidedAt: recorded?.decidedAt ?? null,
    decidedBy: recorded?.decidedBy ?? null,
    note: recorded?.note ?? null,
  } satisfies Approval);
}
