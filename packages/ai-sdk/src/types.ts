import type { SharedV3ProviderOptions } from "@ai-sdk/provider";
import type { ExecContext } from "@nerva/core";
import type { RetryOptions } from "@nerva/core/runs";
import type { LanguageModel, ModelMessage, StepResult, ToolChoice, ToolSet } from "ai";
import type { z } from "zod/v4";
import type { PriceTable } from "./prices.js";
import type { ModelUsage } from "./usage.js";

/**
 * Options of {@link createModel}.
 *
 * @example
 * const options: ModelOptions = { prices, retry: { maxAttempts: 4, initialDelaySeconds: 0.5, maxDelaySeconds: 10 }, recordContent: false };
 */
export interface ModelOptions {
  /** Prices per `provider/model`; without one, calls cost 0 and are flagged `nerva.cost_unknown`. */
  readonly prices?: PriceTable;
  /** `"throw"`: refuse (INVALID_OPTIONS at `createModel`) a model that `prices` does not price. */
  readonly unknownPrice?: "zero" | "throw";
  /**
   * Nerva's retries of 429, 408, 5xx and network errors (the SDK's own are off), in the same
   * shape as a run's `retry`. Defaults: `maxAttempts: 3` (tries in all), 0.5 s doubling
   * (`initialDelaySeconds: 0.5`, `backoffFactor: 2`), `jitter: 0.5`, `maxDelaySeconds: 60`. A
   * provider's retry-after wins over the backoff; one above `maxDelaySeconds`, or a wait past the
   * deadline, fails at once.
   */
  readonly retry?: RetryOptions;
  /** Record prompts and outputs on the `chat` spans (off by default: they may hold personal data). */
  readonly recordContent?: boolean;
  /** Accept a string model id, which the SDK sends to Vercel's hosted AI Gateway. Off by default. */
  readonly allowGateway?: boolean;
  /** Source of retry jitter in [0, 1); `Math.random` by default. */
  readonly random?: () => number;
  /**
   * Credentials to mask, by their own values, wherever provider text is quoted (error messages
   * and causes, spans, events), beside the key the provider's model shows in its configuration
   * (every `@ai-sdk/*` provider does). Each at least 8 characters.
   */
  readonly secrets?: readonly string[];
}

/**
 * What to ask a model. Exactly one of `prompt` and `messages`. `maxSteps` bounds the tool loop
 * (default 1 without tools, 5 with); `output` asks for an object matching a zod schema.
 *
 * @example
 * const call: CallOptions = { system: "Be brief.", prompt: "Where is Oslo?", maxOutputTokens: 200 };
 */
export interface CallOptions<S extends z.ZodType | undefined = z.ZodType | undefined> {
  readonly system?: string;
  readonly prompt?: string;
  readonly messages?: readonly ModelMessage[];
  readonly tools?: ToolSet;
  readonly toolChoice?: ToolChoice<ToolSet>;
  readonly maxSteps?: number;
  readonly output?: S;
  readonly temperature?: number;
  readonly maxOutputTokens?: number;
  readonly topP?: number;
  readonly topK?: number;
  readonly presencePenalty?: number;
  readonly frequencyPenalty?: number;
  readonly stopSequences?: readonly string[];
  readonly seed?: number;
  readonly providerOptions?: SharedV3ProviderOptions;
  /** `stream` only: push reasoning deltas to `ctx.stream` too (off: only the answer is pushed). */
  readonly reasoning?: boolean;
  /**
   * Called before each model step (0-based), before any request is sent; throw to stop the loop
   * (what `modelAgent` does with the policy's budget decision).
   */
  readonly beforeStep?: (step: number) => unknown;
}

/**
 * The outcome of a call. `text` is the last step's text; `object` the parsed structured output
 * (with `output`); `usage` what Nerva charged for every provider call of it, estimates included.
 *
 * @example
 * const { text, usage, steps } = await model.generate({ prompt: "Hi" }, ctx);
 */
export interface ModelResult<O = undefined> {
  readonly text: string;
  readonly object: O;
  readonly usage: ModelUsage;
  readonly steps: readonly StepResult<ToolSet>[];
  readonly finishReason: string;
}

/**
 * A model bound to Nerva: spans, usage and cost, budgets, cancellation and retries around the AI
 * SDK's `generateText`/`streamText`. Made by {@link createModel}.
 *
 * @example
 * const { text } = await model.generate({ prompt: "Say hi" }, ctx);
 * const { object } = await model.generate({ prompt: "Capital of Norway?", output: z.object({ city: z.string() }) }, ctx);
 * await model.stream({ prompt: "Tell a story" }, ctx); // deltas go to ctx.stream
 */
export interface NervaModel {
  /** Normalised provider name (`openai.chat` → `openai`). */
  readonly provider: string;
  readonly modelId: string;
  /** `provider/modelId`: the price key and the name policies see (action kind `model`). */
  readonly id: string;
  /** The model as passed to `createModel`. */
  readonly model: LanguageModel;
  generate<S extends z.ZodType>(
    call: CallOptions<S> & { readonly output: S },
    ctx: ExecContext,
  ): Promise<ModelResult<z.output<S>>>;
  generate(call: CallOptions<undefined>, ctx: ExecContext): Promise<ModelResult>;
  stream<S extends z.ZodType>(
    call: CallOptions<S> & { readonly output: S },
    ctx: ExecContext,
  ): Promise<ModelResult<z.output<S>>>;
  stream(call: CallOptions<undefined>, ctx: ExecContext): Promise<ModelResult>;
}
