import type { Attributes, Span } from "@nerva/core/context";
import type {
  LanguageModelV3CallOptions,
  LanguageModelV3Content,
  LanguageModelV3FinishReason,
} from "@ai-sdk/provider";
import type { CallState } from "./call-state.js";

/** Content attributes are capped: a span is no place for a whole conversation. */
const MAX_CONTENT_CHARS = 16_384;

function capped(text: string): string {
  return text.length <= MAX_CONTENT_CHARS ? text : `${text.slice(0, MAX_CONTENT_CHARS - 1)}…`;
}

function json(value: unknown): string {
  try {
    return capped(JSON.stringify(value) ?? "");
  } catch {
    return "";
  }
}

/**
 * Starts the `chat` span of one provider call under the context's current span, with the
 * request's model, provider and parameters (OpenTelemetry GenAI names; the exporter names it
 * `chat {gen_ai.request.model}` with kind client). Prompts only with `recordContent`.
 */
export function startChatSpan(
  state: CallState,
  params: LanguageModelV3CallOptions,
  stream: boolean,
  step: number,
  attempt: number,
): Span {
  const { label, recordContent } = state.settings;
  const attrs: Attributes = {
    "nerva.span.kind": "client",
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": label.provider,
    "gen_ai.request.model": label.model,
    "gen_ai.request.stream": stream,
    "nerva.step": step,
  };
  if (attempt > 0) attrs["nerva.retry.attempt"] = attempt;
  if (params.temperature !== undefined) attrs["gen_ai.request.temperature"] = params.temperature;
  if (params.maxOutputTokens !== undefined) {
    attrs["gen_ai.request.max_tokens"] = params.maxOutputTokens;
  }
  if (params.topP !== undefined) attrs["gen_ai.request.top_p"] = params.topP;
  if (params.topK !== undefined) attrs["gen_ai.request.top_k"] = params.topK;
  if (params.presencePenalty !== undefined) {
    attrs["gen_ai.request.presence_penalty"] = params.presencePenalty;
  }
  if (params.frequencyPenalty !== undefined) {
    attrs["gen_ai.request.frequency_penalty"] = params.frequencyPenalty;
  }
  if (params.seed !== undefined) attrs["gen_ai.request.seed"] = params.seed;
  if (params.stopSequences !== undefined) {
    attrs["gen_ai.request.stop_sequences"] = json(params.stopSequences);
  }
  if (params.responseFormat?.type === "json") attrs["gen_ai.output.type"] = "json";
  if (params.tools !== undefined && params.tools.length > 0) {
    attrs["nerva.tools.count"] = params.tools.length;
  }
  if (recordContent) attrs["gen_ai.input.messages"] = json(params.prompt);
  return state.ctx.startSpan("chat", attrs, { kind: "client" });
}

/** Writes what the provider said about its response on `span`. */
export function setResponse(
  span: Span,
  response: { id?: string; modelId?: string } | undefined,
  finishReason: LanguageModelV3FinishReason | undefined,
): void {
  if (response?.id !== undefined) span.setAttribute("gen_ai.response.id", response.id);
  if (response?.modelId !== undefined) span.setAttribute("gen_ai.response.model", response.modelId);
  if (finishReason !== undefined) {
    span.setAttribute("gen_ai.response.finish_reasons", finishReason.unified);
  }
}

/** Writes the model's output on `span` (only called with `recordContent`). */
export function setOutput(span: Span, text: string, toolCalls: readonly unknown[]): void {
  const parts: unknown[] = [];
  if (text !== "") parts.push({ type: "text", content: text });
  for (const call of toolCalls) parts.push(call);
  span.setAttribute("gen_ai.output.messages", json([{ role: "assistant", parts }]));
}

/** Text and tool calls of a generate result, for the estimate and `recordContent`. */
export function contentOf(content: readonly LanguageModelV3Content[]): {
  text: string;
  chars: number;
  toolCalls: unknown[];
} {
  let text = "";
  let chars = 0;
  const toolCalls: unknown[] = [];
  for (const part of content) {
    if (part.type === "text") {
      text += part.text;
      chars += part.text.length;
    } else if (part.type === "reasoning") {
      chars += part.text.length;
    } else if (part.type === "tool-call") {
      chars += part.input.length;
      toolCalls.push({ type: "tool_call", id: part.toolCallId, name: part.toolName });
    }
  }
  return { text, chars, toolCalls };
}
