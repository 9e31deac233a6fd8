import type { LanguageModelV3 } from "@ai-sdk/provider";
import type { ToolSet } from "ai";
import { raceSignal } from "./call-scope.js";
import type { CallState } from "./call-state.js";
import type { AiModule } from "./load-ai.js";
import type { CallOptions, ModelResult } from "./types.js";
import { usageOf } from "./usage.js";

/** The options both SDK calls take: prompt, tools, loop, output, settings; its own retries off. */
function sdkOptions(ai: AiModule, model: LanguageModelV3, o: CallOptions, state: CallState) {
  const hasTools = o.tools !== undefined && Object.keys(o.tools).length > 0;
  const base = {
    model,
    tools: o.tools as ToolSet | undefined,
    stopWhen: ai.stepCountIs(o.maxSteps ?? (hasTools ? 5 : 1)),
    // Nerva retries (deadline- and retry-after-aware, inside the middleware); the SDK's do not.
    maxRetries: 0,
    abortSignal: state.signal,
    ...(o.system === undefined ? {} : { system: o.system }),
    ...(o.toolChoice === undefined ? {} : { toolChoice: o.toolChoice }),
    ...(o.output === undefined ? {} : { output: ai.Output.object({ schema: o.output }) }),
    ...(o.temperature === undefined ? {} : { temperature: o.temperature }),
    ...(o.maxOutputTokens === undefined ? {} : { maxOutputTokens: o.maxOutputTokens }),
    ...(o.topP === undefined ? {} : { topP: o.topP }),
    ...(o.topK === undefined ? {} : { topK: o.topK }),
    ...(o.presencePenalty === undefined ? {} : { presencePenalty: o.presencePenalty }),
    ...(o.frequencyPenalty === undefined ? {} : { frequencyPenalty: o.frequencyPenalty }),
    ...(o.stopSequences === undefined ? {} : { stopSequences: [...o.stopSequences] }),
    ...(o.seed === undefined ? {} : { seed: o.seed }),
    ...(o.providerOptions === undefined ? {} : { providerOptions: o.providerOptions }),
  };
  return o.messages === undefined
    ? { ...base, prompt: o.prompt as string }
    : { ...base, messages: [...o.messages] };
}

/** One `generateText` call, settled the moment the call's signal aborts. */
export async function runGenerate(
  ai: AiModule,
  model: LanguageModelV3,
  o: CallOptions,
  state: CallState,
): Promise<ModelResult<unknown>> {
  const result = await raceSignal(ai.generateText(sdkOptions(ai, model, o, state)), state.signal);
  return {
    text: result.text,
    object: o.output === undefined ? undefined : (result.output as unknown),
    usage: usageOf(state.totals),
    steps: result.steps,
    finishReason: result.finishReason,
  };
}

/** A promise that rejects with the signal's reason when it aborts, and its cleanup. */
function abortPromise(signal: AbortSignal): { promise: Promise<never>; release: () => void } {
  let onAbort: (() => void) | null = null;
  const promise = new Promise<never>((_, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
  });
  promise.catch(() => undefined);
  return {
    promise,
    release: () => {
      if (onAbort !== null) signal.removeEventListener("abort", onAbort);
    },
  };
}

/**
 * One `streamText` call. Text deltas are pushed to `ctx.stream` in order, each push awaited
 * (the sink's backpressure paces the model's stream, which is pulled, not buffered); reasoning
 * only with `reasoning: true`; nothing with structured `output` (its deltas are JSON). Every
 * wait also ends when the call's signal aborts.
 */
export async function runStream(
  ai: AiModule,
  model: LanguageModelV3,
  o: CallOptions,
  state: CallState,
): Promise<ModelResult<unknown>> {
  const sink = o.output === undefined ? state.ctx.stream : null;
  const reasoning = o.reasoning === true;
  const aborted = abortPromise(state.signal);
  const result = ai.streamText({
    ...sdkOptions(ai, model, o, state),
    // Errors surface from this loop; the SDK's default handler would also log them.
    onError: () => undefined,
  });
  const parts = result.fullStream[Symbol.asyncIterator]();
  let finished = false;
  try {
    for (;;) {
      const next = await Promise.race([parts.next(), aborted.promise]);
      if (next.done === true) break;
      const part = next.value;
      if (part.type === "text-delta" || (reasoning && part.type === "reasoning-delta")) {
        if (sink !== null && part.text !== "") {
          const pushed = sink.push(part.text);
          if (pushed !== undefined) await Promise.race([pushed, aborted.promise]);
        }
      } else if (part.type === "error") {
        throw part.error;
      } else if (part.type === "abort") {
        throw state.signal.reason ?? new Error("The model stream was aborted.");
      }
    }
    finished = true;
    const [text, steps, finishReason, object] = await Promise.race([
      Promise.all([
        result.text,
        result.steps,
        result.finishReason,
        o.output === undefined ? undefined : result.output,
      ]),
      aborted.promise,
    ]);
    return { text, object, usage: usageOf(state.totals), steps, finishReason };
  } finally {
    aborted.release();
    if (!finished) void parts.return?.().catch(() => undefined);
  }
}
