import { randomBytes } from "node:crypto";
import { z } from "zod";
import { ErrorCode, NervaError, isNervaError, parseOrThrow } from "../errors.js";
import {
  RedisConnection,
  oneConnection,
  redisConnectionFields,
} from "../internal/redis-connection.js";
import type { LimitAdmission, LimitSettlement, LimitStore, LimitVerdict } from "./limit-store.js";
import { ADMIT, SETTLED_MARK_MS, SETTLE, limitKeys } from "./redis/layout.js";

export const RedisLimitStoreOptionsSchema = z
  .object({
    ...redisConnectionFields("nerva:limits:"),
    /**
     * Settlements kept in this process while Redis cannot be reached, sent once it is back;
     * past this many, `settle` rejects UNAVAILABLE instead of keeping more.
     */
    maxPendingSettlements: z.number().int().min(0).max(1_000_000).default(10_000),
  })
  .strict()
  .refine(...oneConnection);
/** Options of {@link RedisLimitStore}. */
export type RedisLimitStoreOptions = z.input<typeof RedisLimitStoreOptionsSchema>;

const ADMITTED: LimitVerdict = Object.freeze({ admitted: true });
const RETRY_MS = 1000;
const num = (v: unknown): number => Number(v);

/**
 * A {@link LimitStore} in Redis: rate-limit windows and budget ledgers that every replica of an
 * app shares, so that each limit is granted once across all of them. A check is one Lua script
 * (one round trip, atomic over every rule it touches); a settlement is another, applied once even
 * when it is sent again within 15 minutes (after a timeout whose outcome is unknown). Times are the engines' clocks (keep replicas in sync with
 * NTP: a skew of d ms moves a window's edges by d ms). Needs the optional package `ioredis`.
 *
 * Fails closed: while Redis cannot be reached, a check rejects with NervaError UNAVAILABLE within
 * `timeoutSeconds` (the engine then refuses), and a settlement is kept in this process and sent
 * when Redis is back (up to `maxPendingSettlements`). Nothing needs restarting.
 *
 * @example
 * import { RedisLimitStore } from "@nerva/core/redis";
 * const limits = new RedisLimitStore({ url: "redis://127.0.0.1:6379" });
 * const policy = new DeclarativePolicyEngine(doc, { limits });
 */
export class RedisLimitStore implements LimitStore {
  /** Prefix of every key this store writes. */
  readonly prefix: string;
  readonly #conn: RedisConnection;
  readonly #keys: ReturnType<typeof limitKeys>;
  readonly #maxPending: number;
  readonly #pending: LimitSettlement[] = [];
  /** Admission ids: unique across processes (random) and within this one (counter). */
  readonly #instance = randomBytes(6).toString("base64url");
  #seq = 0;
  #retry: ReturnType<typeof setTimeout> | null = null;
  #flushing: Promise<void> | null = null;
  #closed = false;

  constructor(options: RedisLimitStoreOptions = {}) {
    const o = parseOrThrow(
      RedisLimitStoreOptionsSchema,
      options,
      ErrorCode.INVALID_OPTIONS,
      "options",
      'Pass { url: "redis://host:6379" } or { client: an ioredis client }, and optionally prefix, timeoutSeconds and maxPendingSettlements.',
    );
    this.prefix = o.prefix;
    this.#maxPending = o.maxPendingSettlements;
    this.#keys = limitKeys(o.prefix);
    this.#conn = new RedisConnection(o, "RedisLimitStore", "rate-limit and budget store");
  }

  /** Settlements waiting for Redis to be reachable again. */
  get pendingSettlements(): number {
    return this.#pending.length;
  }

  async admit(a: LimitAdmission): Promise<LimitVerdict> {
    this.#open();
    const keys = [
      ...a.ledgers.map((l) => this.#keys.ledger(l.id)),
      ...a.windows.map((w) => this.#keys.window(w.id)),
    ];
    const args: (string | number)[] = [
      a.now,
      a.record ? 1 : 0,
      a.holdId,
      a.holdExpiresAt,
      a.usage.tokens,
      a.usage.costUsd,
      a.ledgers.length,
      `${this.#instance}:${++this.#seq}`,
    ];
    for (const l of a.ledgers) {
      args.push(l.windowMs, l.maxTokens ?? "", l.maxCostUsd ?? "", l.holdTokens, l.holdCostUsd);
    }
    for (const w of a.windows) args.push(w.limit, w.windowMs);
    const reply = (await this.#conn.run((r) =>
      this.#conn.script(r, ADMIT, keys, args),
    )) as unknown[];
    if (num(reply[0]) === 0) return ADMITTED;
    if (num(reply[0]) === 1) {
      return {
        admitted: false,
        refusedBy: "ledger",
        index: num(reply[1]),
        tokens: num(reply[2]),
        costUsd: num(reply[3]),
        heldTokens: num(reply[4]),
        retryAfterMs: num(reply[5]),
      };
    }
    return {
      admitted: false,
      refusedBy: "window",
      index: num(reply[1]),
      retryAfterMs: num(reply[2]),
    };
  }

  async settle(s: LimitSettlement): Promise<void> {
    this.#open();
    // Later settlements wait behind earlier ones, so a user's charges arrive in order.
    if (this.#pending.length > 0) return this.#keep(s);
    try {
      await this.#send(s);
    } catch (err) {
      if (!isNervaError(err) || err.code !== ErrorCode.UNAVAILABLE) throw err;
      this.#keep(s, err);
    }
  }

  /**
   * Sends what is pending (one try, bounded by `timeoutSeconds`) and closes the client if this
   * store opened it. Settlements still pending then are lost with the process.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#retry !== null) clearTimeout(this.#retry);
    this.#retry = null;
    await (this.#flushing ?? this.#flush()).catch(() => undefined);
    await this.#conn.close();
  }

  #send(s: LimitSettlement): Promise<unknown> {
    if (s.ledgers.length === 0) return Promise.resolve(0);
    const keys = s.ledgers.map((l) => this.#keys.ledger(l.id));
    keys.push(this.#keys.settled((s.ledgers[0] as { id: string }).id));
    const args = [s.now, s.holdId, s.usage.tokens, s.usage.costUsd, SETTLED_MARK_MS];
    for (const l of s.ledgers) args.push(l.windowMs);
    return this.#conn.run((r) => this.#conn.script(r, SETTLE, keys, args));
  }

  #keep(s: LimitSettlement, cause?: unknown): void {
    if (this.#pending.length >= this.#maxPending) {
      throw new NervaError(
        ErrorCode.UNAVAILABLE,
        `The rate-limit and budget store is unavailable and already keeps ${this.#maxPending} settlements (maxPendingSettlements); this one is refused. Retry later.`,
        { cause, details: { retryAfterSeconds: 1 } },
      );
    }
    this.#pending.push(s);
    this.#schedule();
  }

  #schedule(): void {
    if (this.#retry !== null || this.#closed) return;
    this.#retry = setTimeout(() => {
      this.#retry = null;
      this.#flushing ??= this.#flush().finally(() => {
        this.#flushing = null;
        if (this.#pending.length > 0) this.#schedule();
      });
    }, RETRY_MS);
    // A pending settlement does not keep the process alive on its own.
    this.#retry.unref();
  }

  /** Sends pending settlements in order; stops at the first that fails (tried again later). */
  async #flush(): Promise<void> {
    while (this.#pending.length > 0) {
      try {
        await this.#send(this.#pending[0] as LimitSettlement);
      } catch (err) {
        // Redis still away: keep it. Any other error would fail again the same way: drop it.
        if (isNervaError(err) && err.code === ErrorCode.UNAVAILABLE) return;
      }
      this.#pending.shift();
    }
  }

  #open(): void {
    if (this.#closed) {
      throw new NervaError(
        ErrorCode.INVALID_STATE,
        "The RedisLimitStore is closed; create a new one.",
      );
    }
  }
}
