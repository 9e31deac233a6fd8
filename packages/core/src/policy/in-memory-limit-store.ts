import type {
  LimitAdmission,
  LimitLedger,
  LimitSettlement,
  LimitStore,
  LimitVerdict,
} from "./limit-store.js";
import { SlidingWindowLimiter } from "./rate-limiter.js";

interface Hold {
  tokens: number;
  cost: number;
  expiresAt: number;
}

interface Ledger {
  readonly start: number;
  readonly windowMs: number;
  tokens: number;
  cost: number;
  readonly holds: Map<string, Hold>;
}

const SWEEP_EVERY = 1024;
const ADMITTED: LimitVerdict = Object.freeze({ admitted: true });

/**
 * A {@link LimitStore} in this process's memory: the default of `DeclarativePolicyEngine`. Each
 * operation runs in one synchronous step, so it is atomic for every engine of the process that
 * shares the store. Several replicas each keep their own: behind a load balancer each grants the
 * whole limit, so give them a shared store (`RedisLimitStore` of `@nerva/core/redis`).
 *
 * @example
 * const limits = new InMemoryLimitStore();
 * const a = new DeclarativePolicyEngine(doc, { limits });
 * const b = new DeclarativePolicyEngine(doc, { limits }); // the same counts as `a`
 */
export class InMemoryLimitStore implements LimitStore {
  /** One limiter per window shape (limit, then length); each keyed by window id. */
  readonly #limiters = new Map<number, Map<number, SlidingWindowLimiter>>();
  readonly #ledgers = new Map<string, Ledger>();
  #ops = 0;

  async admit(a: LimitAdmission): Promise<LimitVerdict> {
    if (++this.#ops % SWEEP_EVERY === 0) this.#sweep(a.now);
    for (let i = 0; i < a.ledgers.length; i++) {
      const l = a.ledgers[i] as LimitLedger;
      const ledger = this.#current(l.id, l.windowMs, a.now);
      let heldTokens = 0;
      let heldCost = 0;
      if (ledger !== undefined) {
        for (const [id, h] of ledger.holds) {
          if (h.expiresAt <= a.now) ledger.holds.delete(id);
          else if (id !== a.holdId) {
            heldTokens += h.tokens;
            heldCost += h.cost;
          }
        }
      }
      const tokens = (ledger?.tokens ?? 0) + heldTokens + a.usage.tokens;
      const costUsd = (ledger?.cost ?? 0) + heldCost + a.usage.costUsd;
      if (
        (l.maxTokens !== null && tokens >= l.maxTokens) ||
        (l.maxCostUsd !== null && costUsd >= l.maxCostUsd)
      ) {
        const end = (ledger?.start ?? a.now) + l.windowMs;
        return {
          admitted: false,
          refusedBy: "ledger",
          index: i,
          tokens,
          costUsd,
          heldTokens,
          retryAfterMs: end - a.now,
        };
      }
    }
    for (let i = 0; i < a.windows.length; i++) {
      const w = a.windows[i]!;
      const probe = this.#limiter(w.limit, w.windowMs).peek(w.id, a.now);
      if (!probe.allowed) {
        return { admitted: false, refusedBy: "window", index: i, retryAfterMs: probe.retryAfterMs };
      }
    }
    if (!a.record) return ADMITTED;
    for (const w of a.windows) this.#limiter(w.limit, w.windowMs).hit(w.id, a.now);
    for (const l of a.ledgers) {
      let ledger = this.#current(l.id, l.windowMs, a.now);
      if (ledger === undefined) {
        ledger = { start: a.now, windowMs: l.windowMs, tokens: 0, cost: 0, holds: new Map() };
        this.#ledgers.set(l.id, ledger);
      }
      const own = ledger.holds.get(a.holdId);
      if (own === undefined) {
        if (l.holdTokens > 0 || l.holdCostUsd > 0) {
          ledger.holds.set(a.holdId, {
            tokens: l.holdTokens,
            cost: l.holdCostUsd,
            expiresAt: a.holdExpiresAt,
          });
        }
      } else {
        own.tokens = Math.max(own.tokens, l.holdTokens);
        own.cost = Math.max(own.cost, l.holdCostUsd);
        own.expiresAt = Math.max(own.expiresAt, a.holdExpiresAt);
      }
    }
    return ADMITTED;
  }

  async settle(s: LimitSettlement): Promise<void> {
    for (const l of s.ledgers) {
      let ledger = this.#current(l.id, l.windowMs, s.now);
      if (ledger === undefined) {
        ledger = { start: s.now, windowMs: l.windowMs, tokens: 0, cost: 0, holds: new Map() };
        this.#ledgers.set(l.id, ledger);
      }
      ledger.holds.delete(s.holdId);
      ledger.tokens += s.usage.tokens;
      ledger.cost += s.usage.costUsd;
    }
  }

  async close(): Promise<void> {
    this.#limiters.clear();
    this.#ledgers.clear();
  }

  /** The ledger `id` in its current window; `undefined` when it has none (or it ended). */
  #current(id: string, windowMs: number, now: number): Ledger | undefined {
    const ledger = this.#ledgers.get(id);
    if (ledger === undefined) return undefined;
    if (ledger.start + windowMs > now) return ledger;
    // Its window ended: its charges and holds end with it.
    this.#ledgers.delete(id);
    return undefined;
  }

  #limiter(limit: number, windowMs: number): SlidingWindowLimiter {
    let byLength = this.#limiters.get(limit);
    if (byLength === undefined) this.#limiters.set(limit, (byLength = new Map()));
    let limiter = byLength.get(windowMs);
    if (limiter === undefined) {
      byLength.set(windowMs, (limiter = new SlidingWindowLimiter(limit, windowMs)));
    }
    return limiter;
  }

  /** Forgets ledgers whose window ended. */
  #sweep(now: number): void {
    for (const [id, l] of this.#ledgers) if (l.start + l.windowMs <= now) this.#ledgers.delete(id);
  }
}
