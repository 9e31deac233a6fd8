import type { ExecContext } from "../context/exec-context.js";
import type { TokenUsage } from "../types/usage.js";
import { Budgets } from "./budgets.js";
import type { PolicyDocument } from "./document.js";
import type { LimitStore } from "./limit-store.js";
import { RateLimits, type LimitHit } from "./rate-limits.js";
import type { Target } from "./rules.js";
import type { Checkpoint, PolicyDecision } from "./types.js";

/** How long a hold outlives its request's deadline: time for the settlement to arrive. */
export const HOLD_GRACE_MS = 5000;

/**
 * The rate limits and budgets of a policy document, checked against a {@link LimitStore}: one
 * store call per check (none when nothing applies). `per: request` budgets need no shared state
 * and are checked here first.
 */
export class LimitChecks {
  readonly rates: RateLimits;
  readonly #budgets: Budgets;
  readonly #store: LimitStore;
  readonly #clock: () => number;
  readonly #holdMs: number;

  /** `holdMs`: how long a hold outlives a check of a request that has no deadline. */
  constructor(document: PolicyDocument, store: LimitStore, clock: () => number, holdMs: number) {
    this.rates = new RateLimits(document);
    this.#budgets = new Budgets(document);
    this.#store = store;
    this.#clock = clock;
    this.#holdMs = holdMs;
  }

  /** Whether any budget is charged per user (otherwise settling has nothing to do). */
  get charged(): boolean {
    return this.#budgets.charged;
  }

  /** The `per: user` rate limits, before routing. */
  beforeRoute(ctx: ExecContext, cp: Checkpoint): Promise<PolicyDecision | null> {
    return this.#check(ctx, cp, this.rates.userHits(ctx), true, false);
  }

  /** The handler rate limits of an agent or delegation (none for tools). */
  handlerHits(target: Target, name: string, ctx: ExecContext): readonly LimitHit[] {
    return this.rates.handlerHits(target, name, ctx);
  }

  /**
   * Budgets, then the rate limits in `hits`. With `record`, admits the request in one atomic
   * store call: a slot in every window it was not counted in yet, and its hold on every
   * `per: user` ledger (taken, raised to its usage, or renewed).
   */
  action(
    ctx: ExecContext,
    cp: Checkpoint,
    hits: readonly LimitHit[],
    record: boolean,
  ): Promise<PolicyDecision | null> {
    return this.#check(ctx, cp, hits, record, true);
  }

  /** Releases the request's holds and charges its real usage. */
  async settle(usage: TokenUsage, ctx: ExecContext): Promise<void> {
    if (!this.#budgets.charged) return;
    await this.#store.settle(this.#budgets.settlement(usage, ctx, this.#clock()));
  }

  async #check(
    ctx: ExecContext,
    cp: Checkpoint,
    hits: readonly LimitHit[],
    record: boolean,
    budgets: boolean,
  ): Promise<PolicyDecision | null> {
    if (budgets) {
      const refused = this.#budgets.checkRequest(ctx, cp);
      if (refused !== null) return refused;
    }
    const fresh = this.rates.fresh(hits, ctx);
    const usage = this.#budgets.usage(ctx);
    const ledgers = budgets ? this.#budgets.ledgers(ctx, usage) : [];
    if (fresh.length === 0 && ledgers.length === 0) return null;
    const now = this.#clock();
    const verdict = await this.#store.admit({
      now,
      ledgers,
      windows: fresh.map((h) => h.window),
      usage,
      record,
      holdId: ledgers.length === 0 ? "" : this.#budgets.holdId(ctx),
      holdExpiresAt:
        ctx.timeoutAt === null ? now + this.#holdMs : Math.max(ctx.timeoutAt, now) + HOLD_GRACE_MS,
    });
    if (verdict.admitted) {
      if (record) this.rates.counted(fresh, ctx);
      return null;
    }
    if (verdict.refusedBy === "ledger") {
      return this.#budgets.ledgerRefusal(verdict.index, verdict, ctx, cp);
    }
    return this.rates.refusal(fresh[verdict.index] as LimitHit, verdict.retryAfterMs, cp);
  }
}
