import { createHash, randomUUID } from "node:crypto";
import { z } from "zod";
import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError, parseOrThrow } from "../errors.js";
import { checkContext } from "../runtime/guard.js";
import type { TokenUsage } from "../types/usage.js";
import { InMemoryApprovalStore } from "./approvals.js";
import { allowDecision, denyDecision, pendingDecision, recordDecision } from "./decision.js";
import {
  loadPolicyFile,
  parsePolicyDocument,
  parsePolicyText,
  type PolicyDocument,
  type PolicyDocumentInit,
} from "./document.js";
import { SlidingWindowLimiter } from "./rate-limiter.js";
import {
  Checkpoint,
  type Approval,
  type ApprovalStore,
  type PolicyAction,
  type PolicyDecision,
  type PolicyEngine,
} from "./types.js";

/** Options of {@link DeclarativePolicyEngine}. */
export interface DeclarativePolicyOptions {
  /** Where approvals are kept; default an {@link InMemoryApprovalStore}. */
  readonly approvals?: ApprovalStore;
  /** Epoch milliseconds; replace only to control time (e.g. in tests of windows). */
  readonly clock?: () => number;
}

const OptionsSchema = z
  .object({
    approvals: z
      .custom<ApprovalStore>(
        (v) =>
          typeof v === "object" &&
          v !== null &&
          ["create", "get", "findOpen", "decide", "claim", "list"].every(
            (m) => typeof (v as Record<string, unknown>)[m] === "function",
          ),
        "must implement ApprovalStore",
      )
      .optional(),
    clock: z.custom<() => number>((v) => typeof v === "function", "must be a function").optional(),
  })
  .strict();

export const ActionSchema = z
  .object({
    checkpoint: z.enum([
      Checkpoint.BEFORE_ROUTE,
      Checkpoint.BEFORE_INVOKE,
      Checkpoint.DURING_EXECUTION,
    ]),
    kind: z.enum(["agent", "tool", "delegate", "model"]).optional(),
    name: z.string().min(1).optional(),
    message: z.string().optional(),
    args: z.unknown().optional(),
  })
  .strict()
  .refine((a) => a.checkpoint !== Checkpoint.BEFORE_ROUTE || a.message !== undefined, {
    path: ["message"],
    message: "before_route needs the message",
  })
  .refine(
    (a) =>
      a.checkpoint === Checkpoint.BEFORE_ROUTE || (a.kind !== undefined && a.name !== undefined),
    { path: ["name"], message: "before_invoke and during_execution need kind and name" },
  );

type ParsedAction = z.output<typeof ActionSchema>;
const ACTION_KEYS = new Set(["checkpoint", "kind", "name", "message", "args"]);
const ACTION_KINDS: ReadonlySet<unknown> = new Set(["agent", "tool", "delegate", "model"]);

/**
 * A plainly valid action without a schema run; `null` sends everything else through
 * {@link ActionSchema}, which also produces the field-naming errors.
 */
export function quickAction(v: unknown): ParsedAction | null {
  if (typeof v !== "object" || v === null) return null;
  for (const k in v) if (!ACTION_KEYS.has(k)) return null;
  const a = v as PolicyAction;
  if (a.message !== undefined && typeof a.message !== "string") return null;
  if (a.checkpoint === Checkpoint.BEFORE_ROUTE) {
    if (a.message === undefined || a.kind !== undefined || a.name !== undefined) return null;
    return a;
  }
  if (a.checkpoint !== Checkpoint.BEFORE_INVOKE && a.checkpoint !== Checkpoint.DURING_EXECUTION) {
    return null;
  }
  if (!ACTION_KINDS.has(a.kind) || typeof a.name !== "string" || a.name === "") return null;
  return a;
}

/** Compiles `*` globs into one anchored regular expression. */
function globs(patterns: readonly string[]): RegExp {
  const body = patterns
    .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*"))
    .join("|");
  return new RegExp(`^(?:${body})$`);
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

const anyRole = (ctx: ExecContext, roles: readonly string[] | undefined): boolean =>
  roles !== undefined && roles.some((r) => ctx.permissions.hasRole(r));

interface Ledger {
  start: number;
  tokens: number;
  cost: number;
}

type Target = "agent" | "tool";

/**
 * The policy engine driven by a declarative document (YAML or JSON, validated with zod):
 * - **before routing**: `per: user` rate limits, counted once per request;
 * - **before invocation / during execution** (handlers, tool calls, delegations): context
 *   permissions, then `rules` (first match wins, else `default`), then `budgets` (request usage
 *   from `ctx.rootTokenUsage`, user usage charged by {@link charge}), then `per: handler` and
 *   `per: user_handler` rate limits, then `approvals` (a matching action is `pending` until a
 *   holder of `approverRoles` approves it; the approved action then proceeds once).
 * Every decision is a `policy.decision` event and a `policy.evaluate` span on the context.
 *
 * @example
 * const policy = await DeclarativePolicyEngine.fromFile("./policy.yaml");
 * const decision = await policy.evaluate({ checkpoint: "before_route", message: "hi" }, ctx);
 */
export class DeclarativePolicyEngine implements PolicyEngine {
  /** The validated document. */
  readonly document: PolicyDocument;
  readonly #approvals: ApprovalStore;
  readonly #clock: () => number;
  readonly #rules: { readonly rule: PolicyDocument["rules"][number]; readonly re: RegExp }[];
  readonly #gates: { readonly rule: PolicyDocument["approvals"][number]; readonly re: RegExp }[];
  readonly #limits: {
    readonly rule: PolicyDocument["rateLimits"][number];
    readonly re: RegExp;
    readonly limiter: SlidingWindowLimiter;
  }[];
  readonly #ledgers = new Map<string, Map<string, Ledger>>();
  #charges = 0;

  constructor(document: PolicyDocumentInit, options: DeclarativePolicyOptions = {}) {
    this.document = parsePolicyDocument(document, "policy document");
    const o = parseOrThrow(
      OptionsSchema,
      options,
      ErrorCode.INVALID_OPTIONS,
      "options",
      "Pass { approvals?: ApprovalStore, clock?: () => number }.",
    );
    this.#approvals = o.approvals ?? new InMemoryApprovalStore();
    this.#clock = o.clock ?? Date.now;
    const d = this.document;
    this.#rules = d.rules.map((rule) => ({ rule, re: globs(rule.names) }));
    this.#gates = d.approvals.map((rule) => ({ rule, re: globs(rule.names) }));
    this.#limits = d.rateLimits.map((rule) => ({
      rule,
      re: globs(rule.names),
      limiter: new SlidingWindowLimiter(rule.limit, rule.windowSeconds * 1000),
    }));
    for (const b of d.budgets) if (b.per === "user") this.#ledgers.set(b.name, new Map());
  }

  /**
   * Loads a `.yaml`/`.yml`/`.json` policy file. Errors name the file and the path inside it.
   *
   * @example
   * const policy = await DeclarativePolicyEngine.fromFile("./policy.yaml");
   */
  static async fromFile(
    path: string,
    options: DeclarativePolicyOptions = {},
  ): Promise<DeclarativePolicyEngine> {
    return new DeclarativePolicyEngine(await loadPolicyFile(path), options);
  }

  /**
   * Parses policy text. Errors name `source` and the path inside the document.
   *
   * @example
   * const policy = DeclarativePolicyEngine.fromText(yamlText, { format: "yaml", source: "policy.yaml" });
   */
  static fromText(
    text: string,
    options: DeclarativePolicyOptions & { format: "yaml" | "json"; source?: string },
  ): DeclarativePolicyEngine {
    const { format, source, ...rest } = options;
    return new DeclarativePolicyEngine(
      parsePolicyText(text, { format, ...(source === undefined ? {} : { source }) }),
      rest,
    );
  }

  async evaluate(action: PolicyAction, ctx: ExecContext): Promise<PolicyDecision> {
    checkContext(ctx);
    const a =
      quickAction(action) ??
      parseOrThrow(
        ActionSchema,
        action,
        ErrorCode.INVALID_INPUT,
        "action",
        "Pass { checkpoint, message } before routing, or { checkpoint, kind, name, message | args }.",
      );
    const span = ctx.startSpan("policy.evaluate", {
      checkpoint: a.checkpoint,
      ...(a.name === undefined ? {} : { name: a.name }),
    });
    try {
      const decision =
        a.checkpoint === Checkpoint.BEFORE_ROUTE
          ? this.#beforeRoute(ctx)
          : await this.#beforeAction(a, ctx);
      span.setAttribute("effect", decision.effect);
      if (decision.effect === "allow") span.end("ok");
      else span.end("error", `${decision.code}: ${decision.reason}`);
      recordDecision(ctx, decision, a);
      return decision;
    } catch (err) {
      span.end("error", err instanceof Error ? err.message : String(err));
      throw err;
    }
  }

  async charge(usage: TokenUsage, ctx: ExecContext): Promise<void> {
    checkContext(ctx);
    if (this.#ledgers.size === 0) return;
    const span = ctx.startSpan("policy.charge", {
      tokens: usage.totalTokens,
      cost_usd: usage.costUsd,
    });
    const now = this.#clock();
    if (++this.#charges % 1024 === 0) this.#sweepLedgers(now);
    for (const budget of this.document.budgets) {
      if (budget.per !== "user") continue;
      const ledger = this.#ledger(budget, ctx, now);
      ledger.tokens += usage.totalTokens;
      ledger.cost += usage.costUsd;
    }
    span.end("ok");
  }

  /**
   * Approves a pending approval. The approver comes from `ctx`: it needs one of the rule's
   * `approverRoles`, and may not approve its own request unless the rule allows it.
   *
   * @example
   * await policy.approve(err.details.approvalId as string, managerCtx, "ok for this customer");
   */
  approve(id: string, ctx: ExecContext, note?: string): Promise<Approval> {
    return this.#decide(id, "approved", ctx, note);
  }

  /**
   * Denies a pending approval; the next identical attempt is refused with POLICY_DENIED, once.
   *
   * @example
   * await policy.deny(approvalId, managerCtx, "amount too high");
   */
  deny(id: string, ctx: ExecContext, reason?: string): Promise<Approval> {
    return this.#decide(id, "denied", ctx, reason);
  }

  /** The approval, if `ctx` is its requester or may decide it; `null` otherwise. */
  async approval(id: string, ctx: ExecContext): Promise<Approval | null> {
    checkContext(ctx);
    const a = await this.#approvals.get(id);
    if (a === null) return null;
    const mine = a.userId !== null && a.userId === ctx.userId;
    return mine || anyRole(ctx, a.approverRoles) ? a : null;
  }

  /** Pending approvals that `ctx` may decide. */
  async pendingApprovals(ctx: ExecContext): Promise<Approval[]> {
    checkContext(ctx);
    const now = this.#clock();
    return (await this.#approvals.list({ status: "pending" })).filter(
      (a) => a.expiresAt > now && anyRole(ctx, a.approverRoles),
    );
  }

  async #decide(
    id: string,
    status: "approved" | "denied",
    ctx: ExecContext,
    note: string | undefined,
  ): Promise<Approval> {
    checkContext(ctx);
    const span = ctx.startSpan(`policy.${status === "approved" ? "approve" : "deny"}`, {
      approval_id: String(id),
    });
    try {
      const a = await this.#approvals.get(id);
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
      if (!a.allowSelfApproval && a.userId !== null && a.userId === ctx.userId) {
        throw new NervaError(
          ErrorCode.PERMISSION_DENIED,
          `User "${ctx.userId}" requested approval "${id}" and may not decide it (rule "${a.rule}" forbids self-approval).`,
          { details: { approvalId: id } },
        );
      }
      const decided = await this.#approvals.decide(
        id,
        status,
        ctx.userId,
        note ?? null,
        this.#clock(),
      );
      if (decided === null) {
        throw new NervaError(
          ErrorCode.INVALID_INPUT,
          `Approval "${id}" is no longer pending (it is ${a.status}${a.expiresAt <= this.#clock() ? ", expired" : ""}).`,
          { details: { approvalId: id } },
        );
      }
      ctx.event("policy.approval", { approval_id: id, status, rule: a.rule });
      span.end("ok");
      return decided;
    } catch (err) {
      span.end("error", err instanceof Error ? err.message : String(err));
      throw err;
    }
  }

  // ---- checkpoints ---------------------------------------------------------------------

  #beforeRoute(ctx: ExecContext): PolicyDecision {
    const cp = Checkpoint.BEFORE_ROUTE;
    const user = ctx.userId ?? "anonymous";
    const hits = this.#limits
      .filter((l) => l.rule.per === "user")
      .map((l) => ({ ...l, key: `user:${user}` }));
    const refused = this.#checkLimits(hits, ctx, cp);
    if (refused !== null) return refused;
    return allowDecision(cp, "within rate limits");
  }

  async #beforeAction(a: z.output<typeof ActionSchema>, ctx: ExecContext): Promise<PolicyDecision> {
    const cp = a.checkpoint;
    const name = a.name as string;
    if (a.kind === "model") {
      // A model step: permissions, rules, limits and approvals are about agents and tools; what
      // applies to a model call is the budget.
      const overBudget = this.#overBudget(ctx);
      return overBudget === null ? allowDecision(cp, "within budgets") : overBudget(cp);
    }
    const target: Target = a.kind === "tool" ? "tool" : "agent";
    const allowed =
      target === "tool" ? ctx.permissions.canUseTool(name) : ctx.permissions.canUseAgent(name);
    if (!allowed) {
      return denyDecision(
        cp,
        ErrorCode.PERMISSION_DENIED,
        `This context may not use ${target} "${name}".`,
        null,
      );
    }

    const rule = this.#rules.find(
      ({ rule: r, re }) =>
        (r.kind === "any" || r.kind === target) &&
        re.test(name) &&
        (r.roles === undefined || anyRole(ctx, r.roles)) &&
        !anyRole(ctx, r.unlessRoles),
    );
    if (rule?.rule.effect === "deny" || (rule === undefined && this.document.default === "deny")) {
      const why =
        rule === undefined
          ? `no rule allows ${target} "${name}" and the default is deny`
          : (rule.rule.reason ?? `rule "${rule.rule.name}" denies ${target} "${name}"`);
      return denyDecision(cp, ErrorCode.POLICY_DENIED, why, rule?.rule.name ?? null);
    }

    const over = this.#overBudget(ctx);
    if (over !== null) return over(cp);

    const user = ctx.userId ?? "anonymous";
    const hits = this.#limits
      .filter((l) => l.rule.per !== "user" && target === "agent" && l.re.test(name))
      .map((l) => ({
        ...l,
        key: l.rule.per === "handler" ? `handler:${name}` : `user_handler:${user}:${name}`,
      }));
    const refusedNow = this.#checkLimits(hits, ctx, cp, false);
    if (refusedNow !== null) return refusedNow;

    const gate = this.#gates.find(
      ({ rule: r, re }) =>
        (r.kind === "any" || r.kind === target) && re.test(name) && !anyRole(ctx, r.exemptRoles),
    );
    let approvedBy: string | null = null;
    if (gate !== undefined) {
      const outcome = await this.#gate(gate.rule, target, name, a, ctx, cp);
      if (typeof outcome !== "string") return outcome;
      approvedBy = outcome;
    }

    // Checked again and recorded synchronously: the approval gate may have awaited meanwhile.
    const refused = this.#checkLimits(hits, ctx, cp, true);
    if (refused !== null) return refused;
    return allowDecision(
      cp,
      approvedBy === null ? "allowed" : `approved by ${approvedBy}`,
      gate?.rule.name ?? rule?.rule.name ?? null,
    );
  }

  /**
   * Checks (and, when `commit`, records) the rate limits in `hits`. A request already counted
   * against a limit (a `policy.counted` event of this request) is not counted again.
   */
  #checkLimits(
    hits: { rule: { name: string }; limiter: SlidingWindowLimiter; key: string }[],
    ctx: ExecContext,
    cp: Checkpoint,
    commit = true,
  ): PolicyDecision | null {
    if (hits.length === 0) return null;
    const now = this.#clock();
    const fresh = hits.filter((h) => !this.#counted(ctx, h.rule.name, h.key));
    for (const h of fresh) {
      const probe = h.limiter.peek(h.key, now);
      if (!probe.allowed) {
        return denyDecision(
          cp,
          ErrorCode.RATE_LIMITED,
          `Rate limit "${h.rule.name}" reached for ${h.key}; retry in ${probe.retryAfterSeconds} s.`,
          h.rule.name,
          probe.retryAfterSeconds,
        );
      }
    }
    if (commit) {
      for (const h of fresh) {
        h.limiter.hit(h.key, now);
        ctx.event("policy.counted", { limit: h.rule.name, key: h.key });
      }
    }
    return null;
  }

  #counted(ctx: ExecContext, limit: string, key: string): boolean {
    const events = ctx.events;
    for (let i = events.length - 1; i >= 0; i--) {
      const e = events[i]!;
      if (
        e.name === "policy.counted" &&
        e.requestId === ctx.requestId &&
        e.attributes["limit"] === limit &&
        e.attributes["key"] === key
      ) {
        return true;
      }
    }
    return false;
  }

  #usedApproval(ctx: ExecContext, fingerprint: string): string | null {
    const events = ctx.events;
    for (let i = events.length - 1; i >= 0; i--) {
      const e = events[i]!;
      if (
        e.name === "policy.approval_used" &&
        e.requestId === ctx.requestId &&
        e.attributes["fingerprint"] === fingerprint
      ) {
        return String(e.attributes["by"]);
      }
    }
    return null;
  }

  /** Forgets users whose budget window has ended (they start from zero anyway). */
  #sweepLedgers(now: number): void {
    for (const budget of this.document.budgets) {
      const ledgers = this.#ledgers.get(budget.name);
      if (ledgers === undefined) continue;
      for (const [user, ledger] of ledgers) {
        if (ledger.start + budget.windowSeconds * 1000 <= now) ledgers.delete(user);
      }
    }
  }

  #ledger(budget: PolicyDocument["budgets"][number], ctx: ExecContext, now: number): Ledger {
    const ledgers = this.#ledgers.get(budget.name) as Map<string, Ledger>;
    const user = ctx.userId ?? "anonymous";
    let ledger = ledgers.get(user);
    if (ledger === undefined || ledger.start + budget.windowSeconds * 1000 <= now) {
      ledger = { start: now, tokens: 0, cost: 0 };
      ledgers.set(user, ledger);
    }
    return ledger;
  }

  #overBudget(ctx: ExecContext): ((cp: Checkpoint) => PolicyDecision) | null {
    if (this.document.budgets.length === 0) return null;
    const current = ctx.rootTokenUsage;
    const now = this.#clock();
    for (const b of this.document.budgets) {
      let tokens = current.totalTokens;
      let cost = current.costUsd;
      let retry: number | undefined;
      if (b.per === "user") {
        const ledger = this.#ledger(b, ctx, now);
        tokens += ledger.tokens;
        cost += ledger.cost;
        retry = Math.max(1, Math.ceil((ledger.start + b.windowSeconds * 1000 - now) / 1000));
      }
      const overTokens = b.maxTokens !== undefined && tokens >= b.maxTokens;
      const overCost = b.maxCostUsd !== undefined && cost >= b.maxCostUsd;
      if (overTokens || overCost) {
        const spent = overTokens
          ? `${tokens} of ${b.maxTokens} tokens`
          : `$${cost.toFixed(4)} of $${b.maxCostUsd}`;
        const scope = b.per === "user" ? `user ${ctx.userId ?? "anonymous"}` : "this request";
        return (cp) =>
          denyDecision(
            cp,
            ErrorCode.BUDGET_EXCEEDED,
            `Budget "${b.name}" exhausted: ${scope} used ${spent}.`,
            b.name,
            retry,
          );
      }
    }
    return null;
  }

  /** Approval gate: the approver's id when an approval is used, or the decision to return. */
  async #gate(
    rule: PolicyDocument["approvals"][number],
    target: Target,
    name: string,
    a: z.output<typeof ActionSchema>,
    ctx: ExecContext,
    cp: Checkpoint,
  ): Promise<string | PolicyDecision> {
    const payload = target === "tool" ? canonicalJson(a.args ?? {}) : (a.message ?? "");
    const fingerprint = createHash("sha256")
      .update(JSON.stringify([target, name, ctx.userId, payload]))
      .digest("hex");
    // Within one request an approval is used once however often the action is checked (e.g. by
    // the orchestrator's kit and again by a runtime's policyDelegation hook).
    const used = this.#usedApproval(ctx, fingerprint);
    if (used !== null) return used;
    const now = this.#clock();
    const open = await this.#approvals.findOpen(fingerprint, now);
    if (open !== null && open.status !== "pending" && (await this.#approvals.claim(open.id))) {
      if (open.status === "approved") {
        const by = open.decidedBy ?? "an approver";
        ctx.event("policy.approval_used", { approval_id: open.id, fingerprint, by });
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
      await this.#approvals.create(pending);
    }
    return pendingDecision(
      cp,
      rule.reason ??
        `${target === "tool" ? "Tool" : "Agent"} "${name}" needs approval "${pending.id}" (rule "${rule.name}") before it runs.`,
      rule.name,
      pending.id,
    );
  }
}
