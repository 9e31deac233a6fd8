import type {
  LanguageModelV2,
  LanguageModelV3,
  LanguageModelV3Middleware,
  ProviderV2,
} from "@ai-sdk/provider";
import { ErrorCode, NervaError, isNervaError, parseOrThrow, type ExecContext } from "@nerva/core";
import { isExecContext } from "@nerva/core/context";
import type { LanguageModel } from "ai";
import { CallScope } from "./call-scope.js";
import { CallState, type ModelSettings } from "./call-state.js";
import { callError, invalidOutputError, isNoObjectError } from "./errors.js";
import { aiIfLoaded, loadAi, type AiModule } from "./load-ai.js";
import { chatMiddleware } from "./middleware.js";
import {
  CALL_OPTIONS_FIX,
  CallOptionsSchema,
  MODEL_OPTIONS_FIX,
  modelRetryPolicy,
  ModelOptionsSchema,
  isPlainCall,
} from "./options.js";
import type { PriceTable } from "./prices.js";
import { runGenerate, runStream } from "./run.js";
import { configuredSecrets } from "./secrets.js";
import type { CallOptions, ModelOptions, ModelResult, NervaModel } from "./types.js";

/**
 * `openai.chat` → `openai`: the provider as OpenTelemetry's `gen_ai.provider.name` and price
 * keys name it.
 *
 * @example
 * normaliseProvider("anthropic.messages"); // "anthropic"
 */
export function normaliseProvider(provider: string): string {
  const dot = provider.indexOf(".");
  return (dot === -1 ? provider : provider.slice(0, dot)).toLowerCase();
}

type ModelObject = LanguageModelV3 | LanguageModelV2;

function isModelObject(v: unknown): v is ModelObject {
  if (typeof v !== "object" || v === null) return false;
  const m = v as Record<string, unknown>;
  return (
    (m["specificationVersion"] === "v3" || m["specificationVersion"] === "v2") &&
    typeof m["provider"] === "string" &&
    typeof m["modelId"] === "string" &&
    typeof m["doGenerate"] === "function" &&
    typeof m["doStream"] === "function"
  );
}

/**
 * The message for a model object of a specification version this adapter does not speak (a
 * provider package made for another major version of `ai`), or `null` for anything else.
 */
function otherSpecification(v: unknown): string | null {
  if (typeof v !== "object" || v === null) return null;
  const m = v as Record<string, unknown>;
  const version = m["specificationVersion"];
  if (typeof version !== "string" || version === "v3" || version === "v2") return null;
  const provider = typeof m["provider"] === "string" ? ` (provider "${m["provider"]}")` : "";
  return `Invalid model: createModel got a model of specificationVersion "${version}"${provider}. @nerva/ai-sdk runs on ai@6, whose provider packages make "v3" models (@ai-sdk/openai@3, @ai-sdk/anthropic@3, @ai-sdk/openai-compatible@2, ...; "v2" models of the ai@5 packages work too): install the provider package version made for ai@6.`;
}

function badModel(message: string): NervaError {
  return new NervaError(ErrorCode.INVALID_OPTIONS, message, {
    issues: [{ path: "model", message: "must be a LanguageModel object" }],
  });
}

/** Wraps `model` with `middleware`; a V2 model goes through the SDK's own V3 adapter (and its warning). */
function wrap(
  ai: AiModule,
  model: ModelObject,
  middleware: LanguageModelV3Middleware,
): LanguageModelV3 {
  if (model.specificationVersion === "v3") return ai.wrapLanguageModel({ model, middleware });
  const provider = { languageModel: () => model } as unknown as ProviderV2;
  return ai
    .wrapProvider({ provider, languageModelMiddleware: middleware })
    .languageModel(model.modelId);
}

class BoundModel implements NervaModel {
  readonly provider: string;
  readonly modelId: string;
  readonly id: string;
  readonly model: LanguageModel;
  readonly #settings: ModelSettings;
  #resolved: ModelObject | null;

  constructor(model: LanguageModel, settings: ModelSettings) {
    this.model = model;
    this.provider = settings.label.provider;
    this.modelId = settings.label.model;
    this.id = settings.key;
    this.#settings = settings;
    this.#resolved = typeof model === "string" ? null : model;
  }

  #object(ai: AiModule): ModelObject {
    if (this.#resolved !== null) return this.#resolved;
    const global = (
      globalThis as { AI_SDK_DEFAULT_PROVIDER?: { languageModel(id: string): ModelObject } }
    ).AI_SDK_DEFAULT_PROVIDER;
    this.#resolved = (global ?? ai.gateway).languageModel(this.model as string) as ModelObject;
    return this.#resolved;
  }

  generate(call: CallOptions, ctx: ExecContext): Promise<ModelResult<never>> {
    return this.#call(ctx, call, false) as Promise<ModelResult<never>>;
  }

  stream(call: CallOptions, ctx: ExecContext): Promise<ModelResult<never>> {
    return this.#call(ctx, call, true) as Promise<ModelResult<never>>;
  }

  async #call(
    ctx: ExecContext,
    options: CallOptions,
    streaming: boolean,
  ): Promise<ModelResult<unknown>> {
    if (!isExecContext(ctx)) {
      const swapped = isExecContext(options);
      throw new NervaError(
        ErrorCode.INVALID_INPUT,
        swapped
          ? `Invalid ctx: the context goes last. Call model.${streaming ? "stream" : "generate"}(call, ctx).`
          : "Invalid ctx: must be an ExecContext. Create one with ExecContext.create({ ... }).",
        { issues: [{ path: "ctx", message: "must be an ExecContext" }] },
      );
    }
    if (!isPlainCall(options)) {
      parseOrThrow(
        CallOptionsSchema,
        options,
        ErrorCode.INVALID_INPUT,
        "options",
        CALL_OPTIONS_FIX,
      );
    }
    const ai = aiIfLoaded() ?? (await loadAi());
    const scope = new CallScope(ctx);
    const state = new CallState(ctx, scope.signal, this.#settings, options.beforeStep);
    const label = this.#settings.label;
    try {
      if (scope.signal.aborted) throw scope.signal.reason;
      const model = wrap(ai, this.#object(ai), chatMiddleware(state));
      const run = streaming ? runStream : runGenerate;
      return await run(ai, model, options, state);
    } catch (err) {
      if (scope.signal.aborted && isNervaError(scope.signal.reason)) throw scope.signal.reason;
      if (state.fatal !== undefined) throw state.fatal;
      const secrets = this.#settings.secrets();
      if (isNoObjectError(err)) throw invalidOutputError(err, label, secrets);
      throw callError(err, label, secrets);
    } finally {
      scope.dispose();
    }
  }
}

/**
 * Binds a model of the Vercel AI SDK (`ai@6`: any `LanguageModel` object, V3, or V2 with the
 * SDK's compatibility warning) to Nerva. Each provider call becomes a `chat` span under the
 * current span; its usage (or an estimate, when none is reported or the stream is aborted) is
 * priced with `prices` and charged with `ctx.recordTokens`; `ctx.signal` aborts the HTTP call and
 * the call settles CANCELLED/TIMEOUT at once; 429, 408, 5xx and network errors are retried by
 * Nerva within the deadline. A string model id (sent to Vercel's hosted gateway) is refused
 * unless `allowGateway: true`.
 *
 * @example
 * import { openai } from "@ai-sdk/openai";
 * const prices = new PriceTable({ "openai/gpt-4o-mini": { input: 0.15, output: 0.6, cachedInput: 0.075 } });
 * const model = createModel(openai.chat("gpt-4o-mini"), { prices, retry: { maxAttempts: 4 } });
 * const { text, usage } = await model.generate({ system: "Be brief.", prompt: "Hi" }, ctx);
 */
export function createModel(model: LanguageModel, options: ModelOptions = {}): NervaModel {
  const o = parseOrThrow(
    ModelOptionsSchema,
    options,
    ErrorCode.INVALID_OPTIONS,
    "options",
    MODEL_OPTIONS_FIX,
  );
  const retry = modelRetryPolicy(o.retry);
  let provider: string;
  let modelId: string;
  if (typeof model === "string") {
    if (!o.allowGateway) {
      throw new NervaError(
        ErrorCode.INVALID_OPTIONS,
        `Invalid model: "${model}" is a string id, which the AI SDK sends to Vercel's hosted AI Gateway. Pass a provider's model (e.g. openai.chat("gpt-4o-mini") from @ai-sdk/openai), or createModel(id, { allowGateway: true }) to use the gateway.`,
        { issues: [{ path: "model", message: "string ids need allowGateway: true" }] },
      );
    }
    const slash = model.indexOf("/");
    provider = slash === -1 ? "gateway" : model.slice(0, slash);
    modelId = slash === -1 ? model : model.slice(slash + 1);
  } else if (isModelObject(model)) {
    provider = normaliseProvider(model.provider);
    modelId = model.modelId;
  } else {
    throw badModel(
      otherSpecification(model) ??
        'Invalid model: createModel(model) needs a LanguageModel of the AI SDK (e.g. openai.chat("gpt-4o-mini")), with specificationVersion "v3" (or "v2"), provider, modelId, doGenerate and doStream.',
    );
  }
  const key = `${provider}/${modelId}`;
  const prices = (o.prices as PriceTable | undefined) ?? null;
  if (o.unknownPrice === "throw" && (prices === null || !prices.has(key))) {
    throw new NervaError(
      ErrorCode.INVALID_OPTIONS,
      `Invalid options.prices: no price for "${key}" and unknownPrice is "throw". Add it: new PriceTable({ "${key}": { input, output } }) (USD per 1M tokens).`,
      { issues: [{ path: "options.prices", message: `no price for ${key}` }] },
    );
  }
  return new BoundModel(model, {
    label: { provider, model: modelId },
    key,
    prices,
    retry,
    recordContent: o.recordContent,
    random: o.random ?? Math.random,
    // Read when an error is quoted, so a key the provider loads later (or rotates) is masked too.
    secrets: () => configuredSecrets(typeof model === "string" ? null : model, o.secrets),
  });
}
