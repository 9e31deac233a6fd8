import { randomBytes } from "node:crypto";
import { ExecContext } from "../context/exec-context.js";
import { ErrorCode } from "../errors.js";
import type { TokenUsage } from "../types/usage.js";
import { denyDecision } from "./decision.js";
import type { PolicyDocument } from "./document.js";
import type { LimitLedger, LimitSettlement, LimitUsage } from "./limit-store.js";
import type { Checkpoint, PolicyDecision } from "./types.js";

type Rule = PolicyDocument["budgets"][number];

interface Budget {
  readonly rule: Rule;
  /** The rule's name as the first part of its ledgers' ids. */
  readonly idPrefix: string;
  readonly windowMs: number;
  /** What a request holds from admission until it is charged (`per: user` only). */
  readonly reserveTokens: number;
  readonly reserveCost: number;
}

/** The name of a request tree's holds, for one engine; renamed once they are settled. */
interface HoldSlot {
  id: string;
}

const enc = encodeURIComponent;

/**
 * The `budgets` of a policy document.
 *
 * `per: request` compares the request tree's usage (`ctx.rootTokenUsage`) with the limit, here.
 *
 * `per: user` budgets are ledgers of the engine's `LimitStore`, one per user and window: the real
 * usage of finished requests (charged by {@link settlement}) plus what requests in flight hold.
 * A request is admitted while the ledger's charged usage, the others' holds and its own usage
 * stay under the limit; from its admission it holds `reserveTokens` / `reserveCostUsd` (or its
 * real usage, once a later check sees more) until its settlement releases the hold and charges
 * what it really used. So a burst of concurrent requests overspends by at most one reservation,
 * plus what a request spends beyond its hold after its last check. The name of a request's
 * holds is request-local state (a slot of the context, one per engine).
 */
export class Budgets {
  readonly #perRequest: readonly Budget[];
  readonly #perUser: readonly Budget[];
  readonly #hold = ExecContext.key<HoldSlot>("nerva.policy.budget_hold");
  /** Hold ids: unique across processes (random) and within this engine (counter). */
  readonly #instance = randomBytes(9).toString("base64url");
  #seq = 0;
  readonly #newSlot = (): HoldSlot => ({ id: this.#nextId() });

  constructor(document: PolicyDocument) {
    const all = document.budgets.map((rule) => ({
      rule,
      idPrefix: `${enc(rule.name)}:`,
      windowMs: rule.windowSeconds * 1000,
      reserveTokens:
        rule.per !== "user" || rule.maxTokens === undefined
          ? 0
          : (rule.reserveTokens ?? Math.ceil(rule.maxTokens / 10)),
      reserveCost:
        rule.per !== "user" || rule.maxCostUsd === undefined
          ? 0
          : (rule.reserveCostUsd ?? rule.maxCostUsd / 10),
    }));
    this.#perRequest = all.filter((b) => b.rule.per !== "user");
    this.#perUser = all.filter((b) => b.rule.per === "user");
  }

  /** Whether any budget is charged per user (otherwise settling has nothing to do). */
  get charged(): boolean {
    return this.#perUser.length > 0;
  }

  /** The BUDGET_EXCEEDED refusal of the first exhausted `per: request` budget, or `null`. */
  checkRequest(ctx: ExecContext, cp: Checkpoint): PolicyDecision | null {
    if (this.#perRequest.length === 0) return null;
    const usage = ctx.rootTokenUsage;
    for (const b of this.#perRequest) {
      if (over(b, usage.totalTokens, usage.costUsd)) {
        return refusal(b, ctx, cp, usage.totalTokens, usage.costUsd, 0, undefined);
      }
    }
    return null;
  }

  /** The request's usage so far, as the store counts it. */
  usage(ctx: ExecContext): LimitUsage {
    const u = ctx.rootTokenUsage;
    return { tokens: u.totalTokens, costUsd: u.costUsd };
  }

  /** The `per: user` ledgers of the request's user, each with what the request would hold. */
  ledgers(ctx: ExecContext, usage: LimitUsage): readonly LimitLedger[] {
    if (this.#perUser.length === 0) return [];
    const user = ctx.userId ?? "anonymous";
    return this.#perUser.map((b) => ({
      id: b.idPrefix + enc(user),
      windowMs: b.windowMs,
      maxTokens: b.rule.maxTokens ?? null,
      maxCostUsd: b.rule.maxCostUsd ?? null,
      holdTokens: Math.max(b.reserveTokens, usage.tokens),
      holdCostUsd: Math.max(b.reserveCost, usage.costUsd),
    }));
  }

  /** The name of the request tree's holds (created on first use). */
  holdId(ctx: ExecContext): string {
    return ctx.local(this.#hold, this.#newSlot).id;
  }

  /** The BUDGET_EXCEEDED refusal of the `index`-th `per: user` ledger, with the store's totals. */
  ledgerRefusal(
    index: number,
    totals: { tokens: number; costUsd: number; heldTokens: number; retryAfterMs: number },
    ctx: ExecContext,
    cp: Checkpoint,
  ): PolicyDecision {
    const b = this.#perUser[index] as Budget;
    const retry = Math.max(1, Math.ceil(totals.retryAfterMs / 1000));
    return refusal(b, ctx, cp, totals.tokens, totals.costUsd, totals.heldTokens, retry);
  }

  /**
   * What ends the request: release its holds and charge `usage` (its real usage) to the user's
   * ledgers. Its hold id is the settlement's id (a store applies it once, even when it is sent
   * again); admissions after it hold under a new one.
   */
  settlement(usage: TokenUsage, ctx: ExecContext, now: number): LimitSettlement {
    const slot = ctx.local(this.#hold, this.#newSlot);
    const holdId = slot.id;
    slot.id = this.#nextId();
    const user = enc(ctx.userId ?? "anonymous");
    return {
      now,
      holdId,
      ledgers: this.#perUser.map((b) => ({ id: b.idPrefix + user, windowMs: b.windowMs })),
      usage: { tokens: usage.totalTokens, costUsd: usage.costUsd },
    };
  }

  #nextId(): string {
    return `${this.#instance}.${++this.#seq}`;
  }
}

function over(b: Budget, tokens: number, cost: number): boolean {
  return (
    (b.rule.maxTokens !== undefined && tokens >= b.rule.maxTokens) ||
    (b.rule.maxCostUsd !== undefined && cost >= b.rule.maxCostUsd)
  );
}

function refusal(
  b: Budget,
  ctx: ExecContext,
  cp: Checkpoint,
  tokens: number,
  cost: number,
  held: number,
  retry: number | undefined,
): PolicyDecision {
  const overTokens = b.rule.maxTokens !== undefined && tokens >= b.rule.maxTokens;
  const spent = overTokens
    ? `${tokens} of ${b.rule.maxTokens} tokens`
    : `$${cost.toFixed(4)} of $${b.rule.maxCostUsd}`;
  const scope = b.rule.per === "user" ? `user ${ctx.userId ?? "anonymous"}` : "this request";
  const inFlight =
    held > 0 && overTokens ? ` (${held} of them held by requests still in flight)` : "";
  return denyDecision(
    cp,
    ErrorCode.BUDGET_EXCEEDED,
    `Budget "${b.rule.name}" exhausted: ${scope} used ${spent}${inFlight}.`,
    b.rule.name,
    retry,
  );
}
