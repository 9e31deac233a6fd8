import type {
  LanguageModelV3CallOptions,
  LanguageModelV3GenerateResult,
  LanguageModelV3Middleware,
  LanguageModelV3StreamResult,
} from "@ai-sdk/provider";
import type { Span } from "@nerva/core/context";
import { raceSignal } from "./call-scope.js";
import type { CallState } from "./call-state.js";
import { contentOf, setOutput, setResponse, startChatSpan } from "./chat-span.js";
import { callError, safeText, waitPastDeadline } from "./errors.js";
import { failureOf, retryDelayMs, sleep } from "./retry.js";
import { observeStream } from "./stream-observer.js";
import { countsOf, estimate } from "./usage.js";

/** Asks `beforeStep` (budgets) before a step's first attempt; a refusal is fatal as it is. */
async function checkStep(state: CallState, step: number): Promise<void> {
  if (state.beforeStep === undefined) return;
  try {
    await state.beforeStep(step);
  } catch (err) {
    state.fatal ??= err;
    throw err;
  }
}

/**
 * Ends `span` for a failed attempt and decides: throws the error to report, or waits (honouring
 * retry-after, the deadline and cancellation) and returns so that the caller tries again.
 */
async function afterFailure(
  state: CallState,
  span: Span,
  params: LanguageModelV3CallOptions,
  err: unknown,
  attempt: number,
): Promise<void> {
  const { ctx, signal, settings } = state;
  if (signal.aborted) {
    // The provider may have read the prompt: aborting is no way around a budget.
    state.charge(span, estimate(params, 0), undefined);
    span.end("error", String((signal.reason as Error)?.message ?? "aborted"));
    throw signal.reason;
  }
  const failure = failureOf(err);
  if (failure.status !== undefined) span.setAttribute("http.response.status_code", failure.status);
  span.setAttribute(
    "error.type",
    failure.status === undefined ? errorName(err) : String(failure.status),
  );
  const secrets = settings.secrets();
  span.end("error", safeText(err instanceof Error ? err.message : String(err), 200, secrets));
  if (!failure.retryable || attempt + 1 >= settings.retry.maxAttempts) {
    const reported = callError(err, settings.label, secrets);
    state.fatal ??= reported;
    throw reported;
  }
  const waitMs = retryDelayMs(attempt, failure, settings.retry, settings.random);
  const tooLong =
    (failure.retryAfterMs !== undefined &&
      failure.retryAfterMs > settings.retry.maxDelaySeconds * 1000) ||
    (ctx.timeoutAt !== null && Date.now() + waitMs >= ctx.timeoutAt);
  if (tooLong) {
    const reported = waitPastDeadline(err, settings.label, waitMs, failure.status, secrets);
    state.fatal ??= reported;
    throw reported;
  }
  ctx.event("llm.retry", {
    model: settings.key,
    attempt: attempt + 1,
    delay_ms: Math.round(waitMs),
    status: failure.status ?? 0,
    error: safeText(err instanceof Error ? err.message : String(err), 120, secrets),
  });
  await sleep(waitMs, signal);
}

function errorName(err: unknown): string {
  return err instanceof Error ? err.name : typeof err;
}

/**
 * The `LanguageModelV3Middleware` of one call: each provider call (each step, each retry
 * attempt) is a `chat` span; usage (or an estimate) is priced and charged to the context;
 * failures are retried by Nerva's rules; budgets are asked before each step.
 */
export function chatMiddleware(state: CallState): LanguageModelV3Middleware {
  return {
    specificationVersion: "v3",
    async wrapGenerate({ doGenerate, params }): Promise<LanguageModelV3GenerateResult> {
      const step = state.step++;
      await checkStep(state, step);
      for (let attempt = 0; ; attempt++) {
        const span = startChatSpan(state, params, false, step, attempt);
        let result: LanguageModelV3GenerateResult;
        try {
          // The chat span is the host tracer's active span during the provider call, so the HTTP
          // client span an instrumentation makes for it nests under the chat span.
          result = await raceSignal(state.ctx.runInSpan(span, doGenerate), state.signal);
        } catch (err) {
          await afterFailure(state, span, params, err, attempt);
          continue;
        }
        const content = contentOf(result.content);
        setResponse(span, result.response, result.finishReason);
        const counts = countsOf(result.usage) ?? estimate(params, content.chars);
        state.charge(span, counts, result.response?.modelId);
        if (state.settings.recordContent) setOutput(span, content.text, content.toolCalls);
        span.end("ok");
        return result;
      }
    },
    async wrapStream({ doStream, params }): Promise<LanguageModelV3StreamResult> {
      const step = state.step++;
      await checkStep(state, step);
      for (let attempt = 0; ; attempt++) {
        const span = startChatSpan(state, params, true, step, attempt);
        let result: LanguageModelV3StreamResult;
        try {
          // A stream is retried only here, before its first chunk reached anyone.
          result = await raceSignal(state.ctx.runInSpan(span, doStream), state.signal);
        } catch (err) {
          await afterFailure(state, span, params, err, attempt);
          continue;
        }
        return { ...result, stream: observeStream(result.stream, state, span, params) };
      }
    },
  };
}
