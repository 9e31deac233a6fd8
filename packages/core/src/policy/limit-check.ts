import type { ExecContext } from "../context/exec-context.js";
import { kRunMarks } from "../context/run-slot.js";
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
 * and are checked here first. Inside a durable run, the admissions of its requests into rate
 * windows are also marks of the run (`RunMarks`, beside the run's slot), so that executing the
 * run again does not count them again.
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
    let fresh = this.rates.fresh(hits, ctx);
    // Inside a durable run, each admission is also a mark of the run: an execution of the run
    // again (a resume, a retry, a reclaim) finds it made and does not count the request again.
    // Its budgets are checked and held as in any execution (each settles its own usage).
    const marks = fresh.length === 0 ? undefined : ctx.local(kRunMarks);
    let mark: string | null = null;
    if (marks !== undefined) {
      mark = marks.nextMark(admissionKey(fresh), record);
      if (mark === null) {
        if (record) this.rates.counted(fresh, ctx);
        fresh = [];
      }
    }
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
      if (record) {
        this.rates.counted(fresh, ctx);
        if (mark !== null) await marks?.mark(mark);
      }
      return null;
    }
    if (verdict.refusedBy === "ledger") {
      return this.#budgets.ledgerRefusal(verdict.index, verdict, ctx, cp);
    }
    return this.rates.refusal(fresh[verdict.index] as LimitHit, verdict.retryAfterMs, cp);
  }
}

/**
 * The mark of an admission into `fresh` inside a durable run: its windows' ids, which hold no
 * "," (their parts are URI-encoded), under the `$rate/` prefix no user key can take.
 */
function admissionKey(fresh: readonly LimitHit[]): `$${string}` {
  return `$rate/${fresh.map((h) => h.window.id).join(",")}`;
}
