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

/**
 * One `streamText` call. Text deltas are pushed to `ctx.stream` in order, each push awaited
 * (the sink's backpressure paces the model's stream, which is pulled, not buffered); reasoning
 * only with `reasoning: true` (to the sink's `pushReasoning` when it has one, else as text); nothing with structured `output` (its deltas are JSON). The call
 * settles the moment its signal aborts, even if a push or a tool never returns; nothing is
 * pushed after that.
 */
export async function runStream(
  ai: AiModule,
  model: LanguageModelV3,
  o: CallOptions,
  state: CallState,
): Promise<ModelResult<unknown>> {
  const sink = o.output === undefined ? state.ctx.stream : null;
  const reasoning = o.reasoning === true;
  const signal = state.signal;
  // What the result needs, taken from onFinish: the result's own `text`/`steps` getters each
  // tee and re-read the whole stream.
  let finished: { text: string; steps: ModelResult["steps"]; finishReason: string } | null = null;
  const result = ai.streamText({
    ...sdkOptions(ai, model, o, state),
    // Errors surface from the loop below; the SDK's default handler would also log them.
    onError: () => undefined,
    onFinish: (event) => {
      finished = { text: event.text, steps: event.steps, finishReason: event.finishReason };
    },
  });
  const parts = result.fullStream[Symbol.asyncIterator]();
  let over = false;
  const pump = async (): Promise<ModelResult<unknown>> => {
    for (;;) {
      const next = await parts.next();
      if (next.done === true) break;
      if (over) return Promise.reject(signal.reason);
      const part = next.value;
      if (part.type === "text-delta" || (reasoning && part.type === "reasoning-delta")) {
        if (sink !== null && part.text !== "") {
          try {
            // Reasoning goes apart to a sink that keeps it apart, else with the text as before.
            const pushed =
              part.type === "reasoning-delta" && sink.pushReasoning !== undefined
                ? sink.pushReasoning(part.text)
                : sink.push(part.text);
            if (pushed !== undefined) await pushed;
          } catch (err) {
            // The reader's own failure: it reaches the caller as it is, not as a model failure.
            state.fatal ??= err;
            throw err;
          }
        }
      } else if (part.type === "error") {
        throw part.error;
      } else if (part.type === "abort") {
        throw signal.reason ?? new Error("The model stream was aborted.");
      }
    }
    const object = o.output === undefined ? undefined : await result.output;
    // The loop ends after onFinish ran (the SDK calls it before it closes the stream).
    const end = finished as {
      text: string;
      steps: ModelResult["steps"];
      finishReason: string;
    } | null;
    if (end === null) throw new Error("The model stream ended without a result.");
    return {
      text: end.text,
      object,
      usage: usageOf(state.totals),
      steps: end.steps,
      finishReason: end.finishReason,
    };
  };
  try {
    // One race for the whole call, not one per part: the loop's waits (the next part, a push)
    // all end with it.
    return await raceSignal(pump(), signal);
  } catch (err) {
    over = true;
    void parts.return?.().catch(() => undefined);
    throw err;
  }
}
