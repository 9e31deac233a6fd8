import { z } from "zod/v4";
import { ErrorCode, NervaError, parseOrThrow } from "@nerva/core";

/**
 * The price of one model in US dollars per 1M tokens. `cachedInput` (prompt tokens read from the
 * provider's cache) and `cacheWrite` (prompt tokens written to it) default to `input`.
 * Reasoning tokens are output tokens and cost `output`.
 *
 * @example
 * const mini: ModelPrice = { input: 0.15, output: 0.6, cachedInput: 0.075 };
 */
export interface ModelPrice {
  readonly input: number;
  readonly output: number;
  readonly cachedInput?: number;
  readonly cacheWrite?: number;
}

/**
 * Token counts of one call, as {@link PriceTable.cost} prices them. `inputTokens` is every prompt
 * token, cached ones included; `outputTokens` every produced token, reasoning included.
 *
 * @example
 * const usage: PricedUsage = { inputTokens: 1200, cachedInputTokens: 1000, outputTokens: 80 };
 */
export interface PricedUsage {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cachedInputTokens?: number;
  readonly cacheWriteTokens?: number;
}

const usd = z.number().finite().nonnegative();
const PriceSchema = z
  .object({ input: usd, output: usd, cachedInput: usd.optional(), cacheWrite: usd.optional() })
  .strict();
const KEY = /^[^/\s]+\/\S+$/;
const TableSchema = z.record(
  z.string().regex(KEY, 'must be "provider/model", e.g. "openai/gpt-4o-mini"'),
  PriceSchema,
);

const count = (n: number | undefined): number => (n === undefined || !(n > 0) ? 0 : n);

/**
 * Prices per model, keyed `provider/model` (the provider as Nerva normalises it: `openai.chat`
 * is `openai`). No prices ship with Nerva: they change, so the app supplies its own. A model
 * without a price costs 0 and the call is flagged `nerva.cost_unknown` (see `createModel`).
 *
 * @example
 * const prices = new PriceTable({ "openai/gpt-4o-mini": { input: 0.15, output: 0.6, cachedInput: 0.075 } });
 * prices.cost("openai/gpt-4o-mini", { inputTokens: 1000, outputTokens: 500 }); // 0.00045
 */
export class PriceTable {
  readonly #prices: ReadonlyMap<string, Required<ModelPrice>>;

  constructor(prices: Readonly<Record<string, ModelPrice>>) {
    const table = parseOrThrow(
      TableSchema,
      prices,
      ErrorCode.INVALID_OPTIONS,
      "prices",
      'Pass { "provider/model": { input, output, cachedInput?, cacheWrite? } } in USD per 1M tokens.',
    );
    const map = new Map<string, Required<ModelPrice>>();
    for (const [key, p] of Object.entries(table)) {
      map.set(key, {
        input: p.input,
        output: p.output,
        cachedInput: p.cachedInput ?? p.input,
        cacheWrite: p.cacheWrite ?? p.input,
      });
    }
    this.#prices = map;
  }

  /** True when `model` (`provider/model`) has a price. */
  has(model: string): boolean {
    return this.#prices.has(model);
  }

  /** The price of `model`, or `undefined`. */
  price(model: string): Readonly<Required<ModelPrice>> | undefined {
    return this.#prices.get(model);
  }

  /**
   * The cost in USD of `usage` on `model`: uncached input, cached input, cache writes and output,
   * each at its price per 1M tokens. Throws NOT_FOUND for a model without a price; check
   * {@link has} first, or use {@link costOrNull}.
   *
   * @example
   * prices.cost("openai/gpt-4o-mini", { inputTokens: 2000, cachedInputTokens: 1000, outputTokens: 100 });
   */
  cost(model: string, usage: PricedUsage): number {
    const cost = this.costOrNull(model, usage);
    if (cost !== null) return cost;
    throw new NervaError(
      ErrorCode.NOT_FOUND,
      `PriceTable has no price for "${model}". Add it: new PriceTable({ "${model}": { input, output } }) (USD per 1M tokens).`,
      { details: { model } },
    );
  }

  /** Like {@link cost}, but `null` for a model without a price. */
  costOrNull(model: string, usage: PricedUsage): number | null {
    const p = this.#prices.get(model);
    if (p === undefined) return null;
    const input = count(usage.inputTokens);
    const cached = Math.min(count(usage.cachedInputTokens), input);
    const written = Math.min(count(usage.cacheWriteTokens), input - cached);
    const plain = input - cached - written;
    const micro =
      plain * p.input +
      cached * p.cachedInput +
      written * p.cacheWrite +
      count(usage.outputTokens) * p.output;
    return micro / 1_000_000;
  }
}
