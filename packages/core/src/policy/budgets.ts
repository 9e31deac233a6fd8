import { ExecContext } from "../context/exec-context.js";
import { ErrorCode } from "../errors.js";
import type { TokenUsage } from "../types/usage.js";
import { denyDecision } from "./decision.js";
import type { PolicyDocument } from "./document.js";
import type { Checkpoint, PolicyDecision } from "./types.js";

type Rule = PolicyDocument["budgets"][number];

interface Budget {
  readonly rule: Rule;
  readonly windowMs: number;
  /** What a request holds from admission until it is charged (`per: user` only). */
  readonly reserveTokens: number;
  readonly reserveCost: number;
}

/** One user's usage in one window of one `per: user` budget. */
interface Ledger {
  readonly start: number;
  /** Charged: real usage of finished requests. */
  tokens: number;
  cost: number;
  /** Held by requests in flight (see {@link Hold}). */
  heldTokens: number;
  heldCost: number;
}

/**
 * What one request tree holds against one ledger: the reservation taken at its admission,
 * raised to its real usage as later checks see it grow. Released when the request is charged.
 */
interface Hold {
  readonly ledger: Ledger;
  tokens: number;
  cost: number;
}

const SWEEP_EVERY = 1024;

/**
 * The `budgets` of a policy document.
 *
 * `per: request` compares the request tree's usage (`ctx.rootTokenUsage`) with the limit.
 *
 * `per: user` keeps a ledger per user and window: the real usage of finished requests (added by
 * {@link settle}) plus what requests in flight hold. A request is admitted while the ledger's
 * charged usage, the others' holds and its own usage stay under the limit; from its admission it
 * holds `reserveTokens` / `reserveCostUsd` (or its real usage, once a later check sees more),
 * until {@link settle} releases the hold and charges what it really used. So a burst of
 * concurrent requests overspends by at most one reservation, plus what a request spends beyond
 * its hold after its last check. Holds are request-local state (a slot of the context, one per
 * engine); the ledgers are the engine's shared state.
 */
export class Budgets {
  readonly #all: readonly Budget[];
  readonly #perUser: readonly Budget[];
  readonly #ledgers = new Map<Budget, Map<string, Ledger>>();
  readonly #holds = ExecContext.key<Hold[]>("nerva.policy.budget_holds");
  readonly #clock: () => number;
  #settles = 0;

  constructor(document: PolicyDocument, clock: () => number) {
    this.#all = document.budgets.map((rule) => ({
      rule,
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
    this.#perUser = this.#all.filter((b) => b.rule.per === "user");
    for (const b of this.#perUser) this.#ledgers.set(b, new Map());
    this.#clock = clock;
  }

  /** Whether any budget is charged per user (otherwise settling has nothing to do). */
  get charged(): boolean {
    return this.#perUser.length > 0;
  }

  /**
   * The BUDGET_EXCEEDED refusal of the first exhausted budget, or `null`. Call {@link hold} in
   * the same synchronous step when the action is then allowed.
   */
  check(ctx: ExecContext, cp: Checkpoint): PolicyDecision | null {
    if (this.#all.length === 0) return null;
    const usage = ctx.rootTokenUsage;
    const now = this.#clock();
    const user = ctx.userId ?? "anonymous";
    const holds = ctx.local(this.#holds);
    for (const b of this.#all) {
      let tokens = usage.totalTokens;
      let cost = usage.costUsd;
      let held = 0;
      let retry: number | undefined;
      if (b.rule.per === "user") {
        const ledger = this.#ledger(b, user, now);
        const own = holds?.find((h) => h.ledger === ledger);
        held = ledger.heldTokens - (own?.tokens ?? 0);
        tokens += ledger.tokens + held;
        cost += ledger.cost + ledger.heldCost - (own?.cost ?? 0);
        retry = Math.max(1, Math.ceil((ledger.start + b.windowMs - now) / 1000));
      }
      const overTokens = b.rule.maxTokens !== undefined && tokens >= b.rule.maxTokens;
      const overCost = b.rule.maxCostUsd !== undefined && cost >= b.rule.maxCostUsd;
      if (overTokens || overCost) return refusal(b, ctx, cp, tokens, cost, held, retry);
    }
    return null;
  }

  /**
   * Admits an allowed action's request: its first admission takes the reservation of every
   * `per: user` budget; later ones raise the hold to the request's real usage when it grew past.
   */
  hold(ctx: ExecContext): void {
    if (this.#perUser.length === 0) return;
    const usage = ctx.rootTokenUsage;
    const now = this.#clock();
    const user = ctx.userId ?? "anonymous";
    let holds = ctx.local(this.#holds);
    for (const b of this.#perUser) {
      const tokens = Math.max(b.reserveTokens, usage.totalTokens);
      const cost = Math.max(b.reserveCost, usage.costUsd);
      if (tokens === 0 && cost === 0) continue;
      const ledger = this.#ledger(b, user, now);
      const own = holds?.find((h) => h.ledger === ledger);
      if (own === undefined) {
        holds ??= ctx.local(this.#holds, () => []);
        holds.push({ ledger, tokens, cost });
        ledger.heldTokens += tokens;
        ledger.heldCost += cost;
      } else {
        if (tokens > own.tokens) {
          ledger.heldTokens += tokens - own.tokens;
          own.tokens = tokens;
        }
        if (cost > own.cost) {
          ledger.heldCost += cost - own.cost;
          own.cost = cost;
        }
      }
    }
  }

  /**
   * Ends a request: releases its holds and charges `usage` (its real usage) to the user's
   * ledgers. Holds taken in a window that has ended meanwhile are simply dropped with it.
   */
  settle(usage: TokenUsage, ctx: ExecContext): void {
    if (this.#perUser.length === 0) return;
    const holds = ctx.local(this.#holds);
    if (holds !== undefined) {
      for (const h of holds) {
        h.ledger.heldTokens = Math.max(0, h.ledger.heldTokens - h.tokens);
        h.ledger.heldCost = Math.max(0, h.ledger.heldCost - h.cost);
      }
      holds.length = 0;
    }
    const now = this.#clock();
    if (++this.#settles % SWEEP_EVERY === 0) this.#sweep(now);
    const user = ctx.userId ?? "anonymous";
    for (const b of this.#perUser) {
      const ledger = this.#ledger(b, user, now);
      ledger.tokens += usage.totalTokens;
      ledger.cost += usage.costUsd;
    }
  }

  #ledger(b: Budget, user: string, now: number): Ledger {
    const ledgers = this.#ledgers.get(b) as Map<string, Ledger>;
    let ledger = ledgers.get(user);
    if (ledger === undefined || ledger.start + b.windowMs <= now) {
      ledger = { start: now, tokens: 0, cost: 0, heldTokens: 0, heldCost: 0 };
      ledgers.set(user, ledger);
    }
    return ledger;
  }

  /** Forgets users whose window has ended (they start from zero anyway). */
  #sweep(now: number): void {
    for (const [b, ledgers] of this.#ledgers) {
      for (const [user, ledger] of ledgers) {
        if (ledger.start + b.windowMs <= now) ledgers.delete(user);
      }
    }
  }
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
