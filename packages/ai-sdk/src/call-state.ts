import { ExecContext } from "@nerva/core";
import { type Attributes, type Span } from "@nerva/core/context";
import { type RetryPolicy } from "@nerva/core/runs";
import type { ModelLabel } from "./errors.js";
import type { PriceTable } from "./prices.js";
import { addCounts, zeroCounts, type UsageCounts } from "./usage.js";

/** The settings of a model, after validation and defaults. */
export interface ModelSettings {
  readonly label: ModelLabel;
  /** `provider/model`: the price key and the policy name of the model. */
  readonly key: string;
  readonly prices: PriceTable | null;
  readonly retry: RetryPolicy;
  readonly recordContent: boolean;
  readonly random: () => number;
  /** The credentials to mask wherever provider text is quoted (read when needed). */
  readonly secrets: () => readonly string[];
}

/** Models whose missing price was reported in this request (one `llm.price_unknown` each). */
const kPriceUnknown = ExecContext.key<Set<string>>("nerva.ai-sdk.price-unknown");

/**
 * What one `generate`/`stream` call shares with the middleware around each provider call: the
 * context to record on, the call's signal, usage so far, and the first error that must reach
 * the caller as it is (the SDK may wrap what a middleware throws).
 */
export class CallState {
  readonly ctx: ExecContext;
  readonly signal: AbortSignal;
  readonly settings: ModelSettings;
  readonly beforeStep: ((step: number) => unknown) | undefined;
  readonly totals: UsageCounts = zeroCounts();
  step = 0;
  fatal: unknown = undefined;

  constructor(
    ctx: ExecContext,
    signal: AbortSignal,
    settings: ModelSettings,
    beforeStep: ((step: number) => unknown) | undefined,
  ) {
    this.ctx = ctx;
    this.signal = signal;
    this.settings = settings;
    this.beforeStep = beforeStep;
  }

  /**
   * Prices `counts`, charges them to the context (request, ancestors, budgets) and the call's
   * totals, and writes them on `span`.
   */
  charge(span: Span, counts: UsageCounts, responseModel: string | undefined): void {
    const { prices, label, key } = this.settings;
    let cost: number | null = null;
    if (prices !== null) {
      cost = prices.costOrNull(key, counts);
      if (cost === null && responseModel !== undefined && responseModel !== label.model) {
        cost = prices.costOrNull(`${label.provider}/${responseModel}`, counts);
      }
    }
    if (cost === null) {
      span.setAttribute("nerva.cost_unknown", true);
      const reported = this.ctx.local(kPriceUnknown, () => new Set<string>());
      if (!reported.has(key)) {
        reported.add(key);
        this.ctx.event("llm.price_unknown", {
          model: key,
          fix: `new PriceTable({ "${key}": { input, output } }) (USD per 1M tokens)`,
        });
      }
    }
    counts.costUsd = cost ?? 0;
    const attrs: Attributes = {
      "gen_ai.usage.input_tokens": counts.inputTokens,
      "gen_ai.usage.output_tokens": counts.outputTokens,
      "nerva.cost_usd": counts.costUsd,
    };
    if (counts.cachedInputTokens > 0) {
      attrs["gen_ai.usage.cache_read.input_tokens"] = counts.cachedInputTokens;
    }
    if (counts.cacheWriteTokens > 0) {
      attrs["gen_ai.usage.cache_creation.input_tokens"] = counts.cacheWriteTokens;
    }
    if (counts.reasoningTokens > 0) {
      attrs["gen_ai.usage.reasoning.output_tokens"] = counts.reasoningTokens;
    }
    if (counts.estimated) attrs["nerva.usage.estimated"] = true;
    for (const k in attrs) span.setAttribute(k, attrs[k]!);
    addCounts(this.totals, counts);
    // Charged through a fork whose current span is the chat span, so that the tokens are that
    // span's own usage (and its ancestors' totals), not the usage of the caller's span.
    const at = this.ctx.fork({ span });
    try {
      at.recordTokens({
        promptTokens: counts.inputTokens,
        completionTokens: counts.outputTokens,
        costUsd: counts.costUsd,
        cachedInputTokens: counts.cachedInputTokens,
        reasoningTokens: counts.reasoningTokens,
      });
    } finally {
      at.dispose();
    }
  }
}
