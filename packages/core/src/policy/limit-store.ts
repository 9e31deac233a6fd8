/**
 * Where the shared state of rate limits and budgets lives: the admissions of every sliding
 * window and the ledger of every `per: user` budget, with the holds of the requests in flight.
 * The engine decides which windows and ledgers a check touches; a store only answers the few
 * atomic operations below, so that any number of engines (in any number of processes) sharing
 * one store grant each limit once.
 */

/** One sliding window a check takes a slot in: at most `limit` admissions in any `windowMs`. */
export interface LimitWindow {
  /** Names the window (rule and key, each part URI-encoded by the engine). */
  readonly id: string;
  readonly limit: number;
  readonly windowMs: number;
}

/** One budget ledger a check is admitted against (one rule, one user). */
export interface LimitLedger {
  /** Names the ledger (rule and user, each part URI-encoded by the engine). */
  readonly id: string;
  /** A ledger's window starts at its first use after the previous one ended. */
  readonly windowMs: number;
  /** `null`: no token limit. */
  readonly maxTokens: number | null;
  /** `null`: no cost limit. */
  readonly maxCostUsd: number | null;
  /** What the request holds once admitted: its reservation, or its usage when larger. */
  readonly holdTokens: number;
  readonly holdCostUsd: number;
}

/** Tokens and cost in USD. */
export interface LimitUsage {
  readonly tokens: number;
  readonly costUsd: number;
}

/** One check of {@link LimitStore.admit}. */
export interface LimitAdmission {
  /** Epoch milliseconds (the engine's clock). */
  readonly now: number;
  /** Checked first, in order. */
  readonly ledgers: readonly LimitLedger[];
  /** Checked after the ledgers, in order. */
  readonly windows: readonly LimitWindow[];
  /** The request tree's own usage so far, counted against every ledger. */
  readonly usage: LimitUsage;
  /**
   * `false`: only check (nothing changes). `true`: when everything admits, take a slot in every
   * window and hold against every ledger, in one atomic step; when anything refuses, change
   * nothing.
   */
  readonly record: boolean;
  /** Names the request's holds: one per request tree and engine. */
  readonly holdId: string;
  /** Epoch ms after which the hold is freed even if never settled; a hold's expiry only grows. */
  readonly holdExpiresAt: number;
}

/** The answer of {@link LimitStore.admit}. */
export type LimitVerdict =
  | { readonly admitted: true }
  | {
      readonly admitted: false;
      readonly refusedBy: "ledger";
      /** Index in {@link LimitAdmission.ledgers}. */
      readonly index: number;
      /** Charged, plus the others' holds, plus the request's own usage. */
      readonly tokens: number;
      readonly costUsd: number;
      /** The tokens of that total held by other requests in flight. */
      readonly heldTokens: number;
      /** Until the ledger's window ends. */
      readonly retryAfterMs: number;
    }
  | {
      readonly admitted: false;
      readonly refusedBy: "window";
      /** Index in {@link LimitAdmission.windows}. */
      readonly index: number;
      /** Until the oldest admission leaves the window. */
      readonly retryAfterMs: number;
    };

/** One end of a request, for {@link LimitStore.settle}. */
export interface LimitSettlement {
  readonly now: number;
  /** The hold to release (one that was never taken is fine); also names the settlement. */
  readonly holdId: string;
  /** Every `per: user` ledger of the user: each is charged `usage`. */
  readonly ledgers: readonly Pick<LimitLedger, "id" | "windowMs">[];
  /** The request's real usage. */
  readonly usage: LimitUsage;
}

/**
 * The shared state of rate limits and budgets. {@link InMemoryLimitStore} keeps it in one
 * process (the default); `RedisLimitStore` from `@nerva/core/redis` in Redis, for any number of
 * replicas. Run `describeLimitStoreContract` of `@nerva/core/testing` against your own.
 *
 * @example
 * const policy = new DeclarativePolicyEngine(doc, { limits: new InMemoryLimitStore() });
 */
export interface LimitStore {
  /**
   * Checks the ledgers, then the windows, and (with `record`) admits atomically: either every
   * window gets a slot and every ledger the hold, or nothing changes. A ledger admits while
   * charged + others' unexpired holds + `usage` stays under each limit. Rejects (never passes)
   * when the state cannot be reached.
   */
  admit(admission: LimitAdmission): Promise<LimitVerdict>;
  /**
   * Releases the hold and charges `usage` to every ledger, atomically. The engine sends each
   * settlement once; a store that sends one again itself (after a timeout whose outcome it cannot
   * know) should apply it once.
   */
  settle(settlement: LimitSettlement): Promise<void>;
  /** Releases what the store opened. */
  close(): Promise<void>;
}
