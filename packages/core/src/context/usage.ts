import { ErrorCode, NervaError, parseOrThrow } from "../errors.js";
import { TokenUsageDeltaSchema, type TokenUsage, type TokenUsageDelta } from "../types/usage.js";

/** Token counts are int32 in Nerva's wire format. */
const MAX_TOKENS = 2_147_483_647;

/** Usage of a context with none recorded. */
export const ZERO_USAGE: TokenUsage = Object.freeze({
  promptTokens: 0,
  completionTokens: 0,
  totalTokens: 0,
  costUsd: 0,
});

/** The running totals of one request (mutable; `ExecContext` hands out frozen snapshots). */
export interface UsageTotals {
  p: number;
  c: number;
  t: number;
  cost: number;
}

/** A validated delta, with `totalTokens` defaulted to prompt + completion. */
export function parseUsageDelta(delta: TokenUsageDelta): UsageTotals {
  const d = parseOrThrow(
    TokenUsageDeltaSchema,
    delta,
    ErrorCode.INVALID_INPUT,
    "usage",
    "Token counts are non-negative integers and costUsd a non-negative number.",
  );
  const p = d.promptTokens ?? 0;
  const c = d.completionTokens ?? 0;
  return { p, c, t: d.totalTokens ?? p + c, cost: d.costUsd ?? 0 };
}

/**
 * Throws INVALID_INPUT if adding `d` to `totals` (the largest totals of a tree: its outermost
 * request's) would pass what the wire format can carry (int32). Checked before anything is added.
 */
export function checkUsageFits(
  totals: UsageTotals | null,
  d: UsageTotals,
  requestId: string,
): void {
  if (totals === null || Math.max(totals.p + d.p, totals.c + d.c, totals.t + d.t) <= MAX_TOKENS) {
    return;
  }
  throw new NervaError(
    ErrorCode.INVALID_INPUT,
    `Invalid usage: request ${requestId} would exceed ${MAX_TOKENS} tokens, the most the wire format carries. Record usage per request, not cumulatively across requests.`,
    { issues: [{ path: "usage", message: `token totals must stay <= ${MAX_TOKENS}` }] },
  );
}

/** Adds `d` to `totals` in place. */
export function addUsage(totals: UsageTotals, d: UsageTotals): void {
  totals.p += d.p;
  totals.c += d.c;
  totals.t += d.t;
  totals.cost += d.cost;
}

/** A frozen snapshot of `totals`. */
export function usageSnapshot(totals: UsageTotals | null): TokenUsage {
  if (totals === null) return ZERO_USAGE;
  return Object.freeze({
    promptTokens: totals.p,
    completionTokens: totals.c,
    totalTokens: totals.t,
    costUsd: totals.cost,
  });
}
