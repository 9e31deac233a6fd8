import { createHash, randomUUID } from "node:crypto";
import { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import type { ParsedAction } from "./action.js";
import { denyDecision, pendingDecision } from "./decision.js";
import type { PolicyDocument } from "./document.js";
import { anyRole, globs, type Target } from "./rules.js";
import type { Approval, ApprovalStore, Checkpoint, PolicyDecision } from "./types.js";

type Rule = PolicyDocument["approvals"][number];

/**
 * Whether `ctx` is the requester an approval is bound to: the same user, or, for an approval
 * asked by an anonymous request, the same session of an anonymous request. Nobody else may use
 * it, resume it or (without `allowSelfApproval`) decide it.
 *
 * @example
 * if (!isRequester(approval, ctx)) throw new NervaError("NOT_FOUND", "No such approval.");
 */
export function isRequester(approval: Approval, ctx: ExecContext): boolean {
  if (approval.userId !== null) return approval.userId === ctx.userId;
  return ctx.userId === null && approval.sessionId !== null && approval.sessionId === ctx.sessionId;
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

/**
 * The `approvals` of a policy document: a matching action is `pending` until someone holding
 * one of the rule's `approverRoles` approves it; the approved action then proceeds once, for
 * its requester only. Which approval a request already used is request-local state (a slot of
 * the context, one per engine), so rechecks within that request pass without consuming another.
 */
export class ApprovalGate {
  readonly #store: ApprovalStore;
  readonly #clock: () => number;
  readonly #gates: readonly { readonly rule: Rule; readonly re: RegExp }[];
  /** `requestId \n fingerprint` → who approved, for approvals this tree used. */
  readonly #used = ExecContext.key<Map<string, string>>("nerva.policy.approvals_used");

  constructor(document: PolicyDocument, store: ApprovalStore, clock: () => number) {
    this.#store = store;
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
    const now = this.#clock();
    let open = await this.#store.findOpen(fingerprint, now);
    // A store is the user's code: never hand one requester's approval to another.
    if (open !== null && !isRequester(open, ctx)) open = null;
    if (open !== null && open.status !== "pending" && (await this.#store.claim(open.id))) {
      if (open.status === "approved") {
        const by = open.decidedBy ?? "an approver";
        ctx.local(this.#used, () => new Map()).set(usedKey, by);
        return by;
      }
      return denyDecision(
        cp,
        ErrorCode.POLICY_DENIED,
        `Approval "${open.id}" was denied${open.decidedBy === null ? "" : ` by ${open.decidedBy}`}${open.note === null ? "" : `: ${open.note}`}.`,
        rule.name,
      );
    }
    let pending = open !== null && open.status === "pending" ? open : null;
    if (pending === null) {
      pending = Object.freeze({
        id: randomUUID(),
        status: "pending",
        rule: rule.name,
        kind: target,
        name,
        userId: ctx.userId,
        sessionId: ctx.sessionId,
        payload,
        approverRoles: Object.freeze([...rule.approverRoles]),
        allowSelfApproval: rule.allowSelfApproval,
        fingerprint,
        createdAt: now,
        expiresAt: now + rule.ttlSeconds * 1000,
        decidedAt: null,
        decidedBy: null,
        note: null,
        consumed: false,
      } satisfies Approval);
      await this.#store.create(pending);
    }
    return pendingDecision(
      cp,
      rule.reason ?? `${what} needs approval "${pending.id}" (rule "${rule.name}") before it runs.`,
      rule.name,
      pending.id,
    );
  }

  /** The approval, if `ctx` is its requester or may decide it; `null` otherwise. */
  async get(id: string, ctx: ExecContext): Promise<Approval | null> {
    const a = await this.#store.get(id);
    if (a === null) return null;
    return isRequester(a, ctx) || anyRole(ctx, a.approverRoles) ? a : null;
  }

  /** Pending, unexpired approvals that `ctx` may decide. */
  async pendingFor(ctx: ExecContext): Promise<Approval[]> {
    const now = this.#clock();
    return (await this.#store.list({ status: "pending" })).filter(
      (a) => a.expiresAt > now && anyRole(ctx, a.approverRoles),
    );
  }

  /**
   * Approves or denies a pending approval as `ctx`: it needs one of the approver roles, and may
   * not decide its own request unless the rule allows it.
   */
  async decide(
    id: string,
    status: "approved" | "denied",
    ctx: ExecContext,
    note: string | undefined,
  ): Promise<Approval> {
    const a = await this.#store.get(id);
    if (a === null) {
      throw new NervaError(ErrorCode.NOT_FOUND, `No approval "${id}" exists.`, {
        details: { approvalId: id },
      });
    }
    if (!anyRole(ctx, a.approverRoles)) {
      throw new NervaError(
        ErrorCode.PERMISSION_DENIED,
        `Deciding approval "${id}" needs one of the roles ${a.approverRoles.join(", ")}.`,
        { details: { approvalId: id } },
      );
    }
    if (!a.allowSelfApproval && isRequester(a, ctx)) {
      throw new NervaError(
        ErrorCode.PERMISSION_DENIED,
        `${ctx.userId === null ? `Session "${ctx.sessionId}"` : `User "${ctx.userId}"`} requested approval "${id}" and may not decide it (rule "${a.rule}" forbids self-approval).`,
        { details: { approvalId: id } },
      );
    }
    const decided = await this.#store.decide(id, status, ctx.userId, note ?? null, this.#clock());
    if (decided === null) {
      throw new NervaError(
        ErrorCode.INVALID_INPUT,
        `Approval "${id}" is no longer pending (it is ${a.status}${a.expiresAt <= this.#clock() ? ", expired" : ""}).`,
        { details: { approvalId: id } },
      );
    }
    ctx.event("policy.approval", { approval_id: id, status, rule: a.rule });
    return decided;
  }
}
