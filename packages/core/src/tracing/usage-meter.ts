import { z } from "zod";
import { ErrorCode, NervaError, parseOrThrow } from "../errors.js";
import type { Span } from "../context/span.js";
import type { TraceSink } from "./sink.js";

/** What one user spent, as {@link UsageMeter} counts it. */
export interface UserUsage {
  /** The user (`ctx.userId`); `null` for anonymous requests. */
  readonly userId: string | null;
  /** Requests of this user that ended (local root spans). */
  readonly requests: number;
  /** Prompt tokens of those requests. */
  readonly inputTokens: number;
  /** Completion tokens of those requests. */
  readonly outputTokens: number;
  /** Cost of those requests in US dollars. */
  readonly costUsd: number;
}

const OptionsSchema = z
  .object({
    /** Most users kept; past it the least recently active one is dropped (`evictedUsers`). */
    maxUsers: z.number().int().positive().max(10_000_000).default(10_000),
  })
  .strict();
/** Options of {@link UsageMeter}. */
export type UsageMeterOptions = z.input<typeof OptionsSchema>;

/** The running totals of one user (mutable; the meter hands out frozen copies). */
interface Entry {
  readonly userId: string | null;
  requests: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
}

const snapshot = (e: Entry): UserUsage =>
  Object.freeze({
    userId: e.userId,
    requests: e.requests,
    inputTokens: e.inputTokens,
    outputTokens: e.outputTokens,
    costUsd: e.costUsd,
  });

/**
 * Tokens and cost per user: a {@link TraceSink} that adds the `totalUsage` of each request's
 * root span (`span.isLocalRoot`: the top span of this process for the request) to the request's
 * user (`span.userId`; anonymous requests count under `null`). Each such span counts as one request.
 * Usage recorded outside any span, or after the root span ended, is not seen.
 *
 * Bounded: past `maxUsers` (default 10,000) the least recently active user is dropped and counted
 * in `evictedUsers`. It is a view for dashboards and the trace viewer; budgets are enforced by the
 * policy on `ctx.rootTokenUsage`, not here.
 *
 * @example
 * const meter = new UsageMeter({ maxUsers: 10_000 });
 * const ctx = ExecContext.create({ userId: "u1", traceSink: meter });
 * await orchestrator.handle("hello", ctx);
 * meter.byUser("u1"); // { userId: "u1", requests: 1, inputTokens, outputTokens, costUsd }
 */
export class UsageMeter implements TraceSink {
  readonly maxUsers: number;
  /** Users dropped to stay within `maxUsers`. */
  evictedUsers = 0;
  // Map order is recency: an active user is moved to the end, the first entry is the least recent.
  readonly #users = new Map<string | null, Entry>();

  constructor(options: UsageMeterOptions = {}) {
    const o = parseOrThrow(
      OptionsSchema,
      options,
      ErrorCode.INVALID_OPTIONS,
      "options",
      "Pass { maxUsers?: number } (a positive integer, default 10000).",
    );
    this.maxUsers = o.maxUsers;
  }

  onSpanEnd(span: Span): void {
    if (!span.isLocalRoot) return;
    const userId = span.userId;
    const usage = span.totalUsage;
    let entry = this.#users.get(userId);
    if (entry === undefined) {
      if (this.#users.size >= this.maxUsers) {
        const oldest = this.#users.keys().next().value as string | null;
        this.#users.delete(oldest);
        this.evictedUsers++;
      }
      entry = { userId, requests: 0, inputTokens: 0, outputTokens: 0, costUsd: 0 };
    } else {
      this.#users.delete(userId);
    }
    this.#users.set(userId, entry);
    entry.requests++;
    entry.inputTokens += usage.promptTokens;
    entry.outputTokens += usage.completionTokens;
    entry.costUsd += usage.costUsd;
  }

  /**
   * What `userId` spent (`null`: anonymous requests), or `undefined` for a user the meter has not
   * seen or has evicted. Throws INVALID_INPUT when `userId` is neither a string nor null.
   */
  byUser(userId: string | null): UserUsage | undefined {
    if (userId !== null && typeof userId !== "string") {
      throw new NervaError(
        ErrorCode.INVALID_INPUT,
        `Invalid userId: byUser(userId) takes a user id string, or null for anonymous requests (got ${typeof userId}).`,
        { issues: [{ path: "userId", message: "must be a string or null" }] },
      );
    }
    const entry = this.#users.get(userId);
    return entry === undefined ? undefined : snapshot(entry);
  }

  /** Every user kept, highest cost first (then most requests). */
  users(): UserUsage[] {
    return [...this.#users.values()]
      .map(snapshot)
      .sort((a, b) => b.costUsd - a.costUsd || b.requests - a.requests);
  }

  /** Forgets every user and resets `evictedUsers`. */
  reset(): void {
    this.#users.clear();
    this.evictedUsers = 0;
  }
}
