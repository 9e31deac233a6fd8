import { z } from "zod";

/** Token counts are int32 in Nerva's published spec. */
const count = z.number().int().nonnegative().max(2_147_483_647);

/** Wire schema of TokenUsage. */
export const TokenUsageSchema = z
  .object({
    prompt_tokens: count.describe("Tokens sent to the model."),
    completion_tokens: count.describe("Tokens the model produced."),
    total_tokens: count.describe("All tokens, as the provider reports them."),
    cost_usd: z.number().nonnegative().describe("Estimated cost in US dollars."),
  })
  .meta({ id: "TokenUsage", description: "LLM tokens and cost accumulated by a request." });
export type TokenUsageWire = z.output<typeof TokenUsageSchema>;

/** LLM tokens and cost, accumulated on a context and rolled up to its ancestors. */
export interface TokenUsage {
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly totalTokens: number;
  readonly costUsd: number;
}

/**
 * One LLM call's usage as reported by a caller. `totalTokens` defaults to prompt + completion.
 * `cachedInputTokens` and `reasoningTokens` are parts of the prompt and completion counts (not
 * added to them); they, `model` and `provider` land on the span that spent the tokens.
 */
export interface TokenUsageDelta {
  readonly promptTokens?: number;
  readonly completionTokens?: number;
  readonly totalTokens?: number;
  readonly costUsd?: number;
  readonly cachedInputTokens?: number;
  readonly reasoningTokens?: number;
  readonly model?: string;
  readonly provider?: string;
}

/** Usage spent inside one span (`span.usage`) or its subtree (`span.totalUsage`). */
export interface SpanUsage extends TokenUsage {
  /** Part of `promptTokens` read from the provider's prompt cache. */
  readonly cachedInputTokens: number;
  /** Part of `completionTokens` spent on reasoning. */
  readonly reasoningTokens: number;
}

export const TokenUsageDeltaSchema = z
  .object({
    promptTokens: count.optional(),
    completionTokens: count.optional(),
    totalTokens: count.optional(),
    costUsd: z.number().nonnegative().finite().optional(),
    cachedInputTokens: count.optional(),
    reasoningTokens: count.optional(),
    model: z.string().min(1).max(256).optional(),
    provider: z.string().min(1).max(256).optional(),
  })
  .strict();

export function tokenUsageToWire(u: TokenUsage): TokenUsageWire {
  return {
    prompt_tokens: u.promptTokens,
    completion_tokens: u.completionTokens,
    total_tokens: u.totalTokens,
    cost_usd: u.costUsd,
  };
}

export function tokenUsageFromWire(w: TokenUsageWire): TokenUsage {
  return {
    promptTokens: w.prompt_tokens,
    completionTokens: w.completion_tokens,
    totalTokens: w.total_tokens,
    costUsd: w.cost_usd,
  };
}
