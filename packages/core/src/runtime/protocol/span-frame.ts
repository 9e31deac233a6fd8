import type { Span } from "../../context/span.js";
import { toUnixSeconds } from "../../types/trace.js";
import type { WorkerFrameInput, WorkerSpanWireInput } from "./frames.js";

/**
 * The `span` frame a worker sends for `span`, which has ended, in invocation `id`. Attribute
 * numbers JSON cannot carry (NaN, ±Infinity) are sent as text; usage is the span's own, left out
 * when there is none.
 *
 * @example
 * const sink = { onSpanEnd: (span) => channel.write(encodeFrame(spanFrame(span, invocationId))) };
 */
export function spanFrame(span: Span, id: string | undefined): WorkerFrameInput {
  const attributes: WorkerSpanWireInput["attributes"] = {};
  const attrs = span.attributes;
  for (const key in attrs) {
    const value = attrs[key] as string | number | boolean;
    attributes[key] = typeof value === "number" && !Number.isFinite(value) ? String(value) : value;
  }
  const wire: WorkerSpanWireInput = {
    span_id: span.id,
    parent_id: span.parentId,
    name: span.name,
    kind: span.kind,
    started_at: toUnixSeconds(span.startMs),
    ended_at: toUnixSeconds(span.endMs ?? span.startMs),
    status: span.status,
    error: span.error,
    attributes,
  };
  const u = span.usage;
  if (u.totalTokens > 0 || u.promptTokens > 0 || u.completionTokens > 0 || u.costUsd > 0) {
    wire.usage = {
      prompt_tokens: u.promptTokens,
      completion_tokens: u.completionTokens,
      total_tokens: u.totalTokens,
      cost_usd: u.costUsd,
      cached_input_tokens: u.cachedInputTokens,
      reasoning_tokens: u.reasoningTokens,
    };
  }
  return id === undefined ? { type: "span", span: wire } : { type: "span", id, span: wire };
}
