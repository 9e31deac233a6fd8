import { z } from "zod";
import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, parseOrThrow } from "../errors.js";
import { parseAction, type ParsedAction } from "../policy/action.js";
import { allowDecision, recordDecision } from "../policy/decision.js";
import {
  loadPolicyFile,
  parsePolicyDocument,
  parsePolicyText,
  type PolicyDocument,
  type PolicyDocumentInit,
} from "../policy/document.js";
import { InMemoryLimitStore } from "../policy/in-memory-limit-store.js";
import { LimitChecks } from "../policy/limit-check.js";
import type { LimitStore } from "../policy/limit-store.js";
import { RuleSet, type Target } from "../policy/rules.js";
import {
  Checkpoint,
  type Approval,
  type PolicyAction,
  type PolicyDecision,
  type PolicyEngine,
} from "../policy/types.js";
import { checkContext } from "../runtime/guard.js";
import { InMemoryRunStore } from "../runs/memory/in-memory-store.js";
import { RunQueue } from "../runs/run-queue.js";
import type { TokenUsage } from "../types/usage.js";
import { ApprovalGate } from "./approval-gate.js";

/** Options of {@link DeclarativePolicyEngine}. */
export interface DeclarativePolicyOptions {
  /**
   * The queue approvals are runs of: each is a paused run there, answered with
   * `approvals.resume(id, { decision }, { ctx })`. Give one on a SQLite or Redis store for
   * approvals that every process sharing the store sees and decides; default, a queue named
   * `approvals` on an {@link InMemoryRunStore} of this engine's own (one process, lost on exit).
   * No Runner may serve it: nothing executes an approval.
   */
  readonly approvals?: RunQueue;
  /**
   * Where rate-limit windows and budget ledgers (with the holds of requests in flight) live.
   * Default: an {@link InMemoryLimitStore} of this engine's own (one process: on N replicas each
   * grants the whole limit). Give a `RedisLimitStore` (`@nerva/core/redis`) shared by every
   * replica to count each limit once across all of them. The engine does not close it.
   */
  readonly limits?: LimitStore;
  /**
   * How long a budget hold outlives the last check of a request whose context has no deadline,
   * so that a crashed process does not hold a user's budget forever (a request with a deadline
   * holds until its deadline plus 5 s). Default 600.
   */
  readonly holdSeconds?: number;
  /** Epoch milliseconds; replace only to control time (e.g. in tests of windows). */
  readonly clock?: () => number;
}

const OptionsSchema = z
  .object({
    approvals: z
      .custom<RunQueue>(
        (v) =>
          typeof v === "object" &&
          v !== null &&
          typeof (v as { name?: unknown }).name === "string" &&
          typeof (v as { resume?: unknown }).resume === "function" &&
          typeof (v as { store?: { finishPending?: unknown } }).store?.finishPending === "function",
        "must be a RunQueue on a store with finishPending",
      )
      .optional(),
    limits: z
      .custom<LimitStore>(
        (v) =>
          typeof v === "object" &&
          v !== null &&
          ["admit", "settle", "close"].every(
            (m) => typeof (v as Record<string, unknown>)[m] === "function",
          ),
        "must be a LimitStore (admit, settle and close methods)",
      )
      .optional(),
    holdSeconds: z.number().positive().finite().max(31_536_000).default(600),
    clock: z.custom<() => number>((v) => typeof v === "function", "must be a function").optional(),
  })
  .strict();

/**
 * The policy engine driven by a declarative document (YAML or JSON, validated with zod):
 * - **before routing**: `per: user` rate limits, counted once per request;
 * - **before invocation / during execution** (handlers, tool calls, delegations): context
 *   permissions, then `rules` (first match wins, else `default`), then `budgets` (request usage
 *   from `ctx.rootTokenUsage`; user usage held at admission and settled by {@link charge}), then
 *   `per: handler` and `per: user_handler` rate limits, then `approvals` (a matching action is
 *   `pending` until a holder of `approverRoles` approves it; the approved action then proceeds
 *   once, for the same user or anonymous session). An approval is a paused run of the
 *   {@link approvals} queue, decided by `approvals.resume(id, { decision }, { ctx })`.
 * Each part lives in its own file (`rules.ts`, `budgets.ts`, `rate-limits.ts`,
 * `approval-gate.ts`); the windows of rate limits and the ledgers of budgets live in its
 * {@link DeclarativePolicyOptions.limits} store, one atomic store call per check; what a request
 * was counted against, the approvals it used and the name of its budget holds are request-local
 * slots of its context. Every decision is also a `policy.decision`
 * event and a `policy.evaluate` span, for observability only.
 *
 * @example
 * const policy = await DeclarativePolicyEngine.fromFile("./policy.yaml");
 * const decision = await policy.evaluate({ checkpoint: "before_route", message: "hi" }, ctx);
 */
export class DeclarativePolicyEngine implements PolicyEngine {
  /** The validated document. */
  readonly document: PolicyDocument;
  /** The queue whose paused runs are this engine's approvals (see {@link DeclarativePolicyOptions}). */
  readonly approvals: RunQueue;
  readonly #rules: RuleSet;
  readonly #limits: LimitChecks;
  readonly #gate: ApprovalGate;

  constructor(document: PolicyDocumentInit, options: DeclarativePolicyOptions = {}) {
    this.document = parsePolicyDocument(document, "policy document");
    const o = parseOrThrow(
      OptionsSchema,
      options,
      ErrorCode.INVALID_OPTIONS,
      "options",
      "Pass { approvals?: a RunQueue, limits?: a LimitStore, holdSeconds?: seconds > 0, clock?: () => number }.",
    );
    const clock = o.clock ?? Date.now;
    const d = this.document;
    this.#rules = new RuleSet(d);
    this.#limits = new LimitChecks(
      d,
      o.limits ?? new InMemoryLimitStore(),
      clock,
      o.holdSeconds * 1000,
    );
    this.approvals =
      o.approvals ?? new RunQueue({ store: new InMemoryRunStore(), name: "approvals" });
    this.#gate = new ApprovalGate(d, this.approvals, clock);
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
    const a = parseAction(action);
    const span = ctx.startSpan("policy.evaluate", {
      checkpoint: a.checkpoint,
      ...(a.name === undefined ? {} : { name: a.name }),
    });
    try {
      const decision =
        a.checkpoint === Checkpoint.BEFORE_ROUTE
          ? await this.#beforeRoute(ctx)
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

  /**
   * Settles a finished request: releases what it held against `per: user` budgets and charges
   * its real usage. Call it once per request, when it ends (the orchestrator does).
   */
  async charge(usage: TokenUsage, ctx: ExecContext): Promise<void> {
    checkContext(ctx);
    if (!this.#limits.charged) return;
    const span = ctx.startSpan("policy.charge", {
      tokens: usage.totalTokens,
      cost_usd: usage.costUsd,
    });
    try {
      await this.#limits.settle(usage, ctx);
      span.end("ok");
    } catch (err) {
      span.end("error", err instanceof Error ? err.message : String(err));
      throw err;
    }
  }

  /**
   * The approval `id` if `ctx` is its requester or may decide it; `null` otherwise.
   *
   * @example
   * const approval = await policy.approval(approvalId, requesterCtx);
   */
  async approval(id: string, ctx: ExecContext): Promise<Approval | null> {
    checkContext(ctx);
    return this.#gate.get(id, ctx);
  }

  /**
   * Answers the approval `id` as the approver `ctx`: `approvals.resume(id, answer, { ctx })`,
   * then the approval as `ctx` sees it.
   *
   * @example
   * await policy.decide(approvalId, { decision: "approve" }, managerCtx);
   */
  async decide(
    id: string,
    answer: { readonly decision: "approve" | "deny"; readonly note?: string },
    ctx: ExecContext,
  ): Promise<Approval | null> {
    checkContext(ctx);
    await this.approvals.resume(id, answer, { ctx });
    return this.#gate.get(id, ctx);
  }

  async #beforeRoute(ctx: ExecContext): Promise<PolicyDecision> {
    const cp = Checkpoint.BEFORE_ROUTE;
    const refused = await this.#limits.beforeRoute(ctx, cp);
    return refused ?? allowDecision(cp, "within rate limits");
  }

  async #beforeAction(a: ParsedAction, ctx: ExecContext): Promise<PolicyDecision> {
    const cp = a.checkpoint;
    const name = a.name as string;
    if (a.kind === "model") {
      // A model step: permissions, rules, limits and approvals are about agents and tools; what
      // applies to a model call is the budget.
      const refused = await this.#limits.action(ctx, cp, [], false);
      return refused ?? allowDecision(cp, "within budgets");
    }
    const target: Target = a.kind === "tool" ? "tool" : "agent";
    const rule = this.#rules.check(target, name, ctx, cp);
    if (rule !== null && typeof rule === "object") return rule;

    const hits = this.#limits.handlerHits(target, name, ctx);
    const gate = this.#gate.find(target, name, ctx);
    let approvedBy: string | null = null;
    if (gate !== undefined) {
      // Budgets and limits first: no approval is asked for an action they would refuse.
      const limited = await this.#limits.action(ctx, cp, hits, false);
      if (limited !== null) return limited;
      const outcome = await this.#gate.pass(gate, target, name, a, ctx, cp);
      if (typeof outcome !== "string") return outcome;
      approvedBy = outcome;
    }

    // Checked (again, after an approval) and recorded in one atomic step of the limit store:
    // concurrent requests, in this process or another, may have taken budget or rate meanwhile.
    const refused = await this.#limits.action(ctx, cp, hits, true);
    if (refused !== null) return refused;
    return allowDecision(
      cp,
      approvedBy === null ? "allowed" : `approved by ${approvedBy}`,
      gate?.name ?? rule,
    );
  }
}
