import type {
  LanguageModelV3CallOptions,
  LanguageModelV3Prompt,
  LanguageModelV3Usage,
} from "@ai-sdk/provider";

/**
 * What one provider call cost in tokens, as Nerva charges it. `estimated` is true when the
 * provider reported nothing usable (or the stream ended before its usage arrived) and the
 * counts are characters / 4 of the prompt and of the output received.
 *
 * @example
 * const { usage } = await model.generate({ prompt: "Hi" }, ctx);
 * console.log(usage.inputTokens, usage.outputTokens, usage.costUsd, usage.estimated);
 */
export interface ModelUsage {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly totalTokens: number;
  readonly cachedInputTokens: number;
  readonly cacheWriteTokens: number;
  readonly reasoningTokens: number;
  readonly costUsd: number;
  /** True when any part of it is an estimate. */
  readonly estimated: boolean;
}

/** Mutable counts of one call or a sum of calls. */
export interface UsageCounts {
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  cacheWriteTokens: number;
  reasoningTokens: number;
  costUsd: number;
  estimated: boolean;
}

export function zeroCounts(): UsageCounts {
  return {
    inputTokens: 0,
    outputTokens: 0,
    cachedInputTokens: 0,
    cacheWriteTokens: 0,
    reasoningTokens: 0,
    costUsd: 0,
    estimated: false,
  };
}

const int = (n: number | undefined | null): number | undefined =>
  typeof n === "number" && Number.isFinite(n) && n >= 0 ? Math.round(n) : undefined;

/**
 * The counts of a V3 usage report, or `null` when it carries neither an input nor an output
 * total (the provider reported nothing usable). A missing output total is the sum of text and
 * reasoning tokens when those are known.
 */
export function countsOf(usage: LanguageModelV3Usage | undefined): UsageCounts | null {
  if (usage === undefined || usage === null) return null;
  const inTotal = int(usage.inputTokens?.total);
  const text = int(usage.outputTokens?.text);
  const reasoning = int(usage.outputTokens?.reasoning);
  const outTotal =
    int(usage.outputTokens?.total) ??
    (text === undefined && reasoning === undefined ? undefined : (text ?? 0) + (reasoning ?? 0));
  if (inTotal === undefined && outTotal === undefined) return null;
  return {
    inputTokens: inTotal ?? 0,
    outputTokens: outTotal ?? 0,
    cachedInputTokens: int(usage.inputTokens?.cacheRead) ?? 0,
    cacheWriteTokens: int(usage.inputTokens?.cacheWrite) ?? 0,
    reasoningTokens: reasoning ?? 0,
    costUsd: 0,
    estimated: false,
  };
}

/** Tokens estimated from characters: 4 per token, rounded up. */
export function estimateTokens(chars: number): number {
  return Math.ceil(chars / 4);
}

/** Characters of a V3 prompt (text, reasoning, tool inputs and outputs) for the estimate. */
export function promptChars(prompt: LanguageModelV3Prompt): number {
  let chars = 0;
  for (const message of prompt) {
    const content = message.content;
    if (typeof content === "string") {
      chars += content.length;
      continue;
    }
    for (const part of content) {
      switch (part.type) {
        case "text":
        case "reasoning":
          chars += part.text.length;
          break;
        case "tool-call":
          chars += jsonLength(part.input);
          break;
        case "tool-result":
          chars += jsonLength(part.output);
          break;
        default:
          break;
      }
    }
  }
  return chars;
}

function jsonLength(value: unknown): number {
  if (typeof value === "string") return value.length;
  try {
    return JSON.stringify(value)?.length ?? 0;
  } catch {
    return 0;
  }
}

/** Adds `d` to `sum` in place. */
export function addCounts(sum: UsageCounts, d: UsageCounts): void {
  sum.inputTokens += d.inputTokens;
  sum.outputTokens += d.outputTokens;
  sum.cachedInputTokens += d.cachedInputTokens;
  sum.cacheWriteTokens += d.cacheWriteTokens;
  sum.reasoningTokens += d.reasoningTokens;
  sum.costUsd += d.costUsd;
  sum.estimated ||= d.estimated;
}

/** A frozen {@link ModelUsage} of `c`. */
export function usageOf(c: UsageCounts): ModelUsage {
  return Object.freeze({
    inputTokens: c.inputTokens,
    outputTokens: c.outputTokens,
    totalTokens: c.inputTokens + c.outputTokens,
    cachedInputTokens: c.cachedInputTokens,
    cacheWriteTokens: c.cacheWriteTokens,
    reasoningTokens: c.reasoningTokens,
    costUsd: c.costUsd,
    estimated: c.estimated,
  });
}

/** Usage estimated from characters: the prompt's, plus `outputChars` received. */
export function estimate(params: LanguageModelV3CallOptions, outputChars: number): UsageCounts {
  const counts = zeroCounts();
  counts.inputTokens = estimateTokens(promptChars(params.prompt));
  counts.outputTokens = estimateTokens(outputChars);
  counts.estimated = true;
  return counts;
}
