import type { ExecContext } from "../context/exec-context.js";
import type { ContextEvent } from "../context/events.js";
import type { Span } from "../context/span.js";
import type { Attributes, SpanStatus } from "../types/trace.js";
import type { SpanUsage } from "../types/usage.js";

/** The fields that tie an application's own log line to a Nerva trace. */
export interface LogFields {
  readonly trace_id: string;
  /** The current span of the context (`null` when none is open). */
  readonly span_id: string | null;
  readonly request_id: string;
}

/**
 * The trace, span and request ids of `ctx`, named as Nerva's JSON logs name them, for the app's
 * own logger: its lines then join the trace in a log search (`trace_id`) and sit under the span
 * that was current when they were written (`span_id`).
 *
 * @example
 * const log = logger.child(logFields(ctx)); // pino, or any logger taking bound fields
 * log.info("charging card");
 */
export function logFields(ctx: ExecContext): LogFields {
  return { trace_id: ctx.traceId, span_id: ctx.currentSpanId, request_id: ctx.requestId };
}

/** Usage on a log line: the wire's snake_case names. */
export interface UsageLogLine {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly total_tokens: number;
  readonly cost_usd: number;
  readonly cached_input_tokens: number;
  readonly reasoning_tokens: number;
}

/** One line of {@link JsonLinesTraceSink} for an ended span. */
export interface SpanLogLine {
  readonly ts: string;
  readonly kind: "span";
  readonly trace_id: string;
  readonly span_id: string;
  readonly parent_id: string | null;
  readonly request_id: string;
  readonly name: string;
  readonly duration_ms: number | null;
  readonly status: SpanStatus;
  readonly error: string | null;
  readonly attrs: Readonly<Attributes>;
  /** What the span spent itself; `null` when nothing. */
  readonly usage: UsageLogLine | null;
  /** What the span and every span below it spent; `null` when nothing. */
  readonly total_usage: UsageLogLine | null;
}

/** One line of {@link JsonLinesTraceSink} for an event. */
export interface EventLogLine {
  readonly ts: string;
  readonly kind: "event";
  readonly trace_id: string;
  /** The span that was current when the event was recorded. */
  readonly span_id: string | null;
  readonly request_id: string;
  readonly name: string;
  readonly attrs: Readonly<Attributes>;
}

function usageLine(u: SpanUsage): UsageLogLine | null {
  if (u.totalTokens === 0 && u.promptTokens === 0 && u.completionTokens === 0 && u.costUsd === 0) {
    return null;
  }
  return {
    prompt_tokens: u.promptTokens,
    completion_tokens: u.completionTokens,
    total_tokens: u.totalTokens,
    cost_usd: u.costUsd,
    cached_input_tokens: u.cachedInputTokens,
    reasoning_tokens: u.reasoningTokens,
  };
}

// ---- serialisation -----------------------------------------------------------------------
// Lines are written by hand rather than by JSON.stringify of a SpanLogLine object: a span's line
// is built once per span of every request, and the generic path (an object per line, a Date per
// timestamp) cost several times more. Only values that may need escaping (names, errors,
// attributes, ids that came from elsewhere) go through JSON.stringify; trace ids and this
// process's span ids are validated hex, and the numbers are finite. The object forms below are
// the reference the hand-written lines are tested against.

let isoSecond = Number.NaN;
let isoPrefix = "";

/** `new Date(ms).toISOString()`, with the date and time up to the second formatted once per second. */
export function isoTime(ms: number): string {
  const whole = Math.floor(ms);
  const second = Math.floor(whole / 1000);
  if (second !== isoSecond) {
    isoSecond = second;
    isoPrefix = new Date(second * 1000).toISOString().slice(0, 20); // "2026-01-02T03:04:05."
  }
  const milli = whole - second * 1000;
  return `${isoPrefix}${milli < 10 ? "00" : milli < 100 ? "0" : ""}${milli}Z`;
}

function usageJson(u: SpanUsage): string {
  if (u.totalTokens === 0 && u.promptTokens === 0 && u.completionTokens === 0 && u.costUsd === 0) {
    return "null";
  }
  return `{"prompt_tokens":${u.promptTokens},"completion_tokens":${u.completionTokens},"total_tokens":${u.totalTokens},"cost_usd":${u.costUsd},"cached_input_tokens":${u.cachedInputTokens},"reasoning_tokens":${u.reasoningTokens}}`;
}

const json = JSON.stringify;
// A parent id may have come from another process (any string of up to 128 characters): escaped.
const idJson = (id: string | null): string => (id === null ? "null" : json(id));

/** The JSON line of an ended span: the same text as `JSON.stringify(spanLine(span))`. */
export function spanJson(span: Span): string {
  const duration = span.durationMs;
  const error = span.error;
  return `{"ts":"${isoTime(span.startMs)}","kind":"span","trace_id":"${span.traceId}","span_id":"${span.id}","parent_id":${idJson(span.parentId)},"request_id":${json(span.requestId)},"name":${json(span.name)},"duration_ms":${duration === null ? "null" : Math.round(duration * 1000) / 1000},"status":"${span.status}","error":${error === null ? "null" : json(error)},"attrs":${json(span.attributes)},"usage":${usageJson(span.usage)},"total_usage":${usageJson(span.totalUsage)}}`;
}

/** The JSON line of an event: the same text as `JSON.stringify(eventLine(event))`. */
export function eventJson(event: ContextEvent): string {
  return `{"ts":"${isoTime(event.timestampMs)}","kind":"event","trace_id":"${event.traceId}","span_id":${idJson(event.spanId)},"request_id":${json(event.requestId)},"name":${json(event.name)},"attrs":${json(event.attributes)}}`;
}

/** The log line of an ended span (`ts` is its start; lines are written as spans end). */
export function spanLine(span: Span): SpanLogLine {
  const duration = span.durationMs;
  return {
    ts: new Date(span.startMs).toISOString(),
    kind: "span",
    trace_id: span.traceId,
    span_id: span.id,
    parent_id: span.parentId,
    request_id: span.requestId,
    name: span.name,
    // Microseconds are the most a log reader can use; more digits are noise.
    duration_ms: duration === null ? null : Math.round(duration * 1000) / 1000,
    status: span.status,
    error: span.error,
    attrs: span.attributes,
    usage: usageLine(span.usage),
    total_usage: usageLine(span.totalUsage),
  };
}

/** The log line of an event. */
export function eventLine(event: ContextEvent): EventLogLine {
  return {
    ts: new Date(event.timestampMs).toISOString(),
    kind: "event",
    trace_id: event.traceId,
    span_id: event.spanId,
    request_id: event.requestId,
    name: event.name,
    attrs: event.attributes,
  };
}
