import { createHash } from "node:crypto";
import { ExecContext } from "../context/exec-context.js";
import { kRunMarks } from "../context/run-slot.js";
import { ErrorCode, isNervaError } from "../errors.js";
import type { ParsedAction } from "../policy/action.js";
import { denyDecision, pendingDecision } from "../policy/decision.js";
import type { PolicyDocument } from "../policy/document.js";
import { isRequester } from "../policy/requester.js";
import { anyRole, globs, type Target } from "../policy/rules.js";
import type { Approval, Checkpoint, PolicyDecision } from "../policy/types.js";
import { APPROVAL_KEY, type ApprovalDecision } from "../runs/approval-answer.js";
import type { RunQueue } from "../runs/run-queue.js";
import type { RunOutcome } from "../runs/store.js";
import { RunStatus, type RunRecord } from "../runs/types.js";
import {
  approvalOf,
  approvalRun,
  expiresAtOf,
  isApprovalRun,
  parseDecision,
} from "./approval-runs.js";

type Rule = PolicyDocument["approvals"][number];

/**
 * What a gated call inside a durable run leaves as its mark of the run once it used an approval
 * (see `RunMarks`): the approval and its decision, which later executions of the run take
 * as their own. Under `$approval/<fingerprint>`, a prefix no user key can take.
 */
interface UsedApproval {
  readonly approvalId: string;
  readonly decision: "approve" | "deny";
  readonly decidedBy: string | null;
  readonly note: string | null;
}

/** The key of the marks of gated calls of the action `fingerprint`. */
function markOf(fingerprint: string): `$${string}` {
  return `$approval/${fingerprint}`;
}

/** The mark `made` as an {@link UsedApproval}; anything else is a denial (fail closed). */
function usedApproval(made: unknown): UsedApproval {
  const m = (typeof made === "object" && made !== null ? made : {}) as Record<string, unknown>;
  const text = (v: unknown) => (typeof v === "string" ? v : null);
  return {
    approvalId: text(m["approvalId"]) ?? "?",
    decision: m["decision"] === "approve" ? "approve" : "deny",
    decidedBy: text(m["decidedBy"]),
    note: m["decision"] === "approve" ? null : (text(m["note"]) ?? "the mark was not a decision"),
  };
}

/** JSON with object keys sorted, so equal arguments always hash alike. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** The refusal of a gated call whose approval `m` was denied. */
function denied(cp: Checkpoint, rule: Rule, m: UsedApproval): PolicyDecision {
  return denyDecision(
    cp,
    ErrorCode.POLICY_DENIED,
    `Approval "${m.approvalId}" was denied${m.decidedBy === null ? "" : ` by ${m.decidedBy}`}${m.note === null ? "" : `: ${m.note}`}.`,
    rule.name,
  );
}

/**
 * The `approvals` of a policy document: a matching action is `pending` until someone holding
 * one of the rule's `approverRoles` approves it; the approved action then proceeds once, for
 * its requester only. Each approval is a run of `queue`, created paused and answered with
 * `queue.resume`; the attempt that uses the answer ends the run (`finishPending`: one atomic
 * step, so of concurrent attempts in any processes one uses it). Which approval a request
 * already used is request-local state (a slot of the context, one per engine), so rechecks
 * within that request pass without using another. Inside a durable run, the approval a gated
 * call used (or the denial it met) is also a mark of the run (`RunMarks`): the same call
 * when the run executes again (a resume, a retry, a reclaim) takes it, and neither asks again
 * nor uses another.
 */
export class ApprovalGate {
  readonly #queue: RunQueue;
  readonly #clock: () => number;
  readonly #gates: readonly { readonly rule: Rule; readonly re: RegExp }[];
  /** `requestId \n fingerprint` → who approved, for approvals this tree used. */
  readonly #used = ExecContext.key<Map<string, string>>("nerva.policy.approvals_used");

  constructor(document: PolicyDocument, queue: RunQueue, clock: () => number) {
    this.#queue = queue;
    this.#clock = clock;
    this.#gates = document.approvals.map((rule) => ({ rule, re: globs(rule.names) }));
  }

  /** The approval rule that gates `target` `name` for `ctx`, if any. */
  find(target: Target, name: string, ctx: ExecContext): Rule | undefined {
    if (this.#gates.length === 0) return undefined;
    return this.#gates.find(
      ({ rule: r, re }) =>
        (r.kind === "any" || r.kind === target) && re.test(name) && !anyRole(ctx, r.exemptRoles),
    )?.rule;
  }

  /**
   * Passes the gate `rule`: resolves to the approver's id when an approval is used, else to
   * the decision to return (`pending` with the approval to decide, or a refusal).
   */
  async pass(
    rule: Rule,
    target: Target,
    name: string,
    a: ParsedAction,
    ctx: ExecContext,
    cp: Checkpoint,
  ): Promise<string | PolicyDecision> {
    const what = `${target === "tool" ? "Tool" : "Agent"} "${name}"`;
    if (ctx.userId === null && ctx.sessionId === null) {
      return denyDecision(
        cp,
        ErrorCode.POLICY_DENIED,
        `${what} needs an approval (rule "${rule.name}"), and an approval is bound to the user or session that asked for it: this request has neither, so it is refused. Give the context a userId or a sessionId.`,
        rule.name,
      );
    }
    const payload = target === "tool" ? canonicalJson(a.args ?? {}) : (a.message ?? "");
    const identity =
      ctx.userId !== null
        ? [target, name, ctx.userId, payload]
        : [target, name, null, payload, ctx.sessionId];
    const fingerprint = createHash("sha256").update(JSON.stringify(identity)).digest("hex");
    // Within one request an approval is used once however often the action is checked (e.g. by
    // the orchestrator's kit and again by a runtime's policyDelegation hook).
    const usedKey = `${ctx.requestId}\n${fingerprint}`;
    const used = ctx.local(this.#used)?.get(usedKey);
    if (used !== undefined) return used;
    // Inside a durable run: the n-th gated call of this action in an execution takes what the
    // n-th one of an earlier execution used (numbered like step keys).
    const marks = ctx.local(kRunMarks);
    if (marks !== undefined) {
      const made = marks.madeMark(markOf(fingerprint));
      if (made !== undefined) {
        const m = usedApproval(made);
        if (m.decision === "deny") return denied(cp, rule, m);
        const by = m.decidedBy ?? "an approver";
        ctx.local(this.#used, () => new Map()).set(usedKey, by);
        return by;
      }
    }
    const now = this.#clock();
    const open = await this.#open(fingerprint, name, ctx, now);
    if (open?.status === RunStatus.PAUSED) {
      return pendingDecision(cp, this.#waiting(rule, what, open.id), rule.name, open.id);
    }
    if (open !== null) {
      const outcome = await this.#use(open, ctx);
      if (outcome !== null) {
        const d = outcome.decision;
        const m: UsedApproval = {
          approvalId: open.id,
          decision: d.decision,
          decidedBy: d.decidedBy,
          note: d.note,
        };
        // Used, then marked: a worker dying between the two leaves the run to ask anew, never
        // an approval used twice.
        if (marks !== undefined) {
          const numbered = marks.nextMark(markOf(fingerprint), true);
          if (numbered !== null) await marks.mark(numbered, { ...m });
        }
        if (d.decision === "deny") return denied(cp, rule, m);
        const by = d.decidedBy ?? "an approver";
        ctx.local(this.#used, () => new Map()).set(usedKey, by);
        return by;
      }
      // Another attempt used it first: this one asks anew.
    }
    const init = approvalRun(
      this.#queue.name,
      { rule, kind: target, name, payload, fingerprint, now },
      ctx,
    );
    const { run } = await this.#queue.store.create(init);
    return pendingDecision(cp, this.#waiting(rule, what, run.id), rule.name, run.id);
  }

  #waiting(rule: Rule, what: string, id: string): string {
    return rule.reason ?? `${what} needs approval "${id}" (rule "${rule.name}") before it runs.`;
  }

  /**
   * The newest unexpired approval of `ctx` for `fingerprint` that is waiting (paused) or
   * answered and not used (pending). Expired ones met on the way are cancelled, so they leave
   * the paused list.
   */
  async #open(
    fingerprint: string,
    name: string,
    ctx: ExecContext,
    now: number,
  ): Promise<RunRecord | null> {
    let found: RunRecord | null = null;
    for (const status of [RunStatus.PAUSED, RunStatus.PENDING] as const) {
      let cursor: string | null = null;
      do {
        const page = await this.#queue.list({
          status,
          handler: name,
          ...(ctx.userId === null ? {} : { userId: ctx.userId }),
          limit: 1000,
          cursor,
        });
        for (const run of page.runs) {
          if (!isApprovalRun(run) || run.input.args["fingerprint"] !== fingerprint) continue;
          const who = { userId: run.context.user_id, sessionId: run.context.session_id };
          // The store is shared: never hand one requester's approval to another.
          if (!isRequester(who, ctx)) continue;
          if (expiresAtOf(run) <= now) {
            await this.#queue.cancel(run.id, { reason: "approval expired" }).catch(() => undefined);
            continue;
          }
          if (found === null || run.createdAt >= found.createdAt) found = run;
        }
        cursor = page.nextCursor;
      } while (cursor !== null);
    }
    return found;
  }

  /**
   * Uses the answered approval `run` for `ctx`: ends it with its decision as the result. `null`
   * when another attempt ended it first.
   */
  async #use(run: RunRecord, ctx: ExecContext): Promise<{ decision: ApprovalDecision } | null> {
    const holder: { decision: ApprovalDecision | null } = { decision: null };
    try {
      await this.#queue.store.finishPending(run.id, (answers): RunOutcome => {
        // An answer that is not a decision (written past RunQueue.resume) refuses: fail closed.
        const decision: ApprovalDecision = parseDecision(answers.get(APPROVAL_KEY)) ?? {
          decision: "deny",
          note: "the answer was not a decision",
          decidedBy: null,
          decidedAt: 0,
        };
        holder.decision = decision;
        const verb = decision.decision === "approve" ? "approved" : "denied";
        return {
          status: RunStatus.SUCCEEDED,
          result: {
            status: "success",
            output: `${verb}${decision.decidedBy === null ? "" : ` by ${decision.decidedBy}`}; used by request ${ctx.requestId}`,
            data: { ...decision, usedBy: ctx.requestId },
            error: null,
            handler: run.handlers[0] ?? "",
          },
        };
      });
      return holder.decision === null ? null : { decision: holder.decision };
    } catch (err) {
      if (isNervaError(err, ErrorCode.INVALID_STATE)) return null;
      throw err;
    }
  }

  /** The approval, if `ctx` is its requester or may decide it; `null` otherwise. */
  async get(id: string, ctx: ExecContext): Promise<Approval | null> {
    const run = await this.#queue.get(id);
    if (run === null || run.queue !== this.#queue.name || !isApprovalRun(run)) return null;
    const who = { userId: run.context.user_id, sessionId: run.context.session_id };
    const view = approvalOf(run, null, this.#clock());
    if (!isRequester(who, ctx) && !anyRole(ctx, view.approverRoles)) return null;
    if (run.status !== RunStatus.PENDING) return view;
    // Answered: read the decision without using it.
    try {
      const { run: now, answers } = await this.#queue.store.finishPending(id, () => null);
      return approvalOf(now, parseDecision(answers.get(APPROVAL_KEY)), this.#clock());
    } catch (err) {
      if (!isNervaError(err, ErrorCode.INVALID_STATE)) throw err;
      const again = await this.#queue.get(id);
      return again === null ? null : approvalOf(again, null, this.#clock());
    }
  }
}
