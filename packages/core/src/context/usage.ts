import { ErrorCode, NervaError, parseOrThrow } from "../errors.js";
import {
  TokenUsageDeltaSchema,
  type SpanUsage,
  type TokenUsage,
  type TokenUsageDelta,
} from "../types/usage.js";

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

/** A validated delta: the totals it adds, plus what only the span that spent it records. */
export interface UsageDelta extends UsageTotals {
  cached: number;
  reasoning: number;
  model: string | undefined;
  provider: string | undefined;
}

/** A validated delta, with `totalTokens` defaulted to prompt + completion. */
export function parseUsageDelta(delta: TokenUsageDelta): UsageDelta {
  const d = parseOrThrow(
    TokenUsageDeltaSchema,
    delta,
    ErrorCode.INVALID_INPUT,
    "usage",
    "Token counts are non-negative integers and costUsd a non-negative number.",
  );
  const p = d.promptTokens ?? 0;
  const c = d.completionTokens ?? 0;
  return {
    p,
    c,
    t: d.totalTokens ?? p + c,
    cost: d.costUsd ?? 0,
    cached: d.cachedInputTokens ?? 0,
    reasoning: d.reasoningTokens ?? 0,
    model: d.model,
    provider: d.provider,
  };
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

/** The running usage of one span (own or subtree). */
export interface SpanUsageTotals extends UsageTotals {
  cached: number;
  reasoning: number;
}

/** Adds `d` to a span's totals (created on first use) and returns them. */
export function addSpanUsage(totals: SpanUsageTotals | null, d: UsageDelta): SpanUsageTotals {
  if (totals === null) {
    return { p: d.p, c: d.c, t: d.t, cost: d.cost, cached: d.cached, reasoning: d.reasoning };
  }
  addUsage(totals, d);
  totals.cached += d.cached;
  totals.reasoning += d.reasoning;
  return totals;
}

/** Usage of a span with none recorded. */
export const ZERO_SPAN_USAGE: SpanUsage = Object.freeze({
  ...ZERO_USAGE,
  cachedInputTokens: 0,
  reasoningTokens: 0,
});

/** A frozen snapshot of a span's totals. */
export function spanUsageSnapshot(totals: SpanUsageTotals | null): SpanUsage {
  if (totals === null) return ZERO_SPAN_USAGE;
  return Object.freeze({
    promptTokens: totals.p,
    completionTokens: totals.c,
    totalTokens: totals.t,
    costUsd: totals.cost,
    cachedInputTokens: totals.cached,
    reasoningTokens: totals.reasoning,
  });
}
