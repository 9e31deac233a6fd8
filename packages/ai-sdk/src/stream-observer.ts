import type {
  LanguageModelV3CallOptions,
  LanguageModelV3FinishReason,
  LanguageModelV3StreamPart,
  LanguageModelV3Usage,
} from "@ai-sdk/provider";
import type { Span } from "@nerva/core/context";
import type { CallState } from "./call-state.js";
import { setOutput, setResponse } from "./chat-span.js";
import { safeText } from "./errors.js";
import { countsOf, estimate } from "./usage.js";

type Outcome = "ok" | "error" | "aborted" | "cancelled";

/**
 * Passes a provider stream through unchanged, at its reader's pace (it pulls one part per read:
 * no buffering of its own), while it watches for the response metadata, the first chunk, the
 * output's length and the final usage. When the stream ends — finished, failed, cancelled by its
 * reader or aborted by the call's signal — the `chat` span ends and the usage is charged: the
 * reported one, or an estimate from the characters seen when none arrived. An abort errors the
 * stream at once, so a reader never hangs on a body that stopped.
 */
export function observeStream(
  source: ReadableStream<LanguageModelV3StreamPart>,
  state: CallState,
  span: Span,
  params: LanguageModelV3CallOptions,
): ReadableStream<LanguageModelV3StreamPart> {
  const reader = source.getReader();
  const signal = state.signal;
  const record = state.settings.recordContent;
  const startMs = performance.now();
  let controller: ReadableStreamDefaultController<LanguageModelV3StreamPart> | null = null;
  let ended = false;
  let firstChunk = true;
  let outputChars = 0;
  let text = "";
  const toolCalls: unknown[] = [];
  let usage: LanguageModelV3Usage | undefined;
  let finishReason: LanguageModelV3FinishReason | undefined;
  let response: { id?: string; modelId?: string } | undefined;
  let streamError: string | undefined;

  const finish = (outcome: Outcome, error?: string): void => {
    if (ended) return;
    ended = true;
    signal.removeEventListener("abort", onAbort);
    setResponse(span, response, finishReason);
    const counts = countsOf(usage) ?? estimate(params, outputChars);
    state.charge(span, counts, response?.modelId);
    if (record) setOutput(span, text, toolCalls);
    if (outcome !== "ok") span.setAttribute("nerva.stream.outcome", outcome);
    const failed = outcome === "error" || outcome === "aborted" || streamError !== undefined;
    if (failed) span.end("error", error ?? streamError ?? outcome);
    else span.end("ok");
  };

  const onAbort = (): void => {
    const reason: unknown = signal.reason;
    finish("aborted", reason instanceof Error ? reason.message : "aborted");
    controller?.error(reason);
    reader.cancel(reason).catch(() => undefined);
  };

  const watch = (part: LanguageModelV3StreamPart): void => {
    switch (part.type) {
      case "text-delta":
        outputChars += part.delta.length;
        if (record) text += part.delta;
        break;
      case "reasoning-delta":
      case "tool-input-delta":
        outputChars += part.delta.length;
        break;
      case "tool-call":
        if (record) toolCalls.push({ type: "tool_call", id: part.toolCallId, name: part.toolName });
        break;
      case "response-metadata":
        response = { ...response };
        if (part.id !== undefined) response.id = part.id;
        if (part.modelId !== undefined) response.modelId = part.modelId;
        return;
      case "finish":
        usage = part.usage;
        finishReason = part.finishReason;
        return;
      case "error":
        streamError = safeText(
          part.error instanceof Error ? part.error.message : String(part.error),
          200,
          state.settings.secrets(),
        );
        return;
      default:
        return;
    }
    if (firstChunk) {
      firstChunk = false;
      span.setAttribute(
        "gen_ai.response.time_to_first_chunk",
        (performance.now() - startMs) / 1000,
      );
    }
  };

  if (signal.aborted) queueMicrotask(onAbort);
  else signal.addEventListener("abort", onAbort, { once: true });

  return new ReadableStream<LanguageModelV3StreamPart>(
    {
      start(c) {
        controller = c;
      },
      async pull(c) {
        let next: Awaited<ReturnType<typeof reader.read>>;
        try {
          next = await reader.read();
        } catch (err) {
          if (ended) return;
          const secrets = state.settings.secrets();
          finish("error", safeText(err instanceof Error ? err.message : String(err), 200, secrets));
          c.error(err);
          return;
        }
        if (ended) return;
        if (next.done) {
          finish("ok");
          c.close();
          return;
        }
        watch(next.value);
        c.enqueue(next.value);
      },
      cancel(reason) {
        finish("cancelled");
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}
