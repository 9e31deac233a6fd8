import type { ContextEvent } from "../../context/events.js";
import type { Span } from "../../context/span.js";
import { toUnixSeconds, type Attributes } from "../../types/trace.js";
import type { WorkerFrameInput, WorkerSpanWireInput } from "./frames.js";

/** Attribute numbers JSON cannot carry (NaN, ±Infinity) become text. */
function wireAttributes(attrs: Readonly<Attributes>): WorkerSpanWireInput["attributes"] {
  const out: WorkerSpanWireInput["attributes"] = {};
  for (const key in attrs) {
    const value = attrs[key] as string | number | boolean;
    out[key] = typeof value === "number" && !Number.isFinite(value) ? String(value) : value;
  }
  return out;
}

/**
 * The `span` frame a worker sends for `span`, which has ended, in invocation `id`. Attribute
 * numbers JSON cannot carry (NaN, ±Infinity) are sent as text; usage is the span's own, left out
 * when there is none.
 *
 * @example
 * const sink = { onSpanEnd: (span) => channel.write(encodeFrame(spanFrame(span, invocationId))) };
 */
export function spanFrame(span: Span, id: string | undefined): WorkerFrameInput {
  const attributes = wireAttributes(span.attributes);
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

/**
 * The `event` frame a worker sends for `event`, recorded in invocation `id`.
 *
 * @example
 * const sink = { onSpanEnd() {}, onEvent: (e) => channel.write(encodeFrame(eventFrame(e, invocationId))) };
 */
export function eventFrame(event: ContextEvent, id: string | undefined): WorkerFrameInput {
  const wire = {
    name: event.name,
    at: toUnixSeconds(event.timestampMs),
    span_id: event.spanId,
    attributes: wireAttributes(event.attributes),
  };
  return id === undefined ? { type: "event", event: wire } : { type: "event", id, event: wire };
}
