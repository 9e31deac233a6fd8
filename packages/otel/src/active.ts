import { context, isSpanContextValid, trace, TraceFlags } from "@opentelemetry/api";

/**
 * The active OpenTelemetry span as a W3C `traceparent`, or `null` when there is none. Give it to
 * a bridge as `traceparentFrom`, so that Nerva's root span nests under the HTTP server span your
 * OpenTelemetry instrumentation opened for the request (and follows its sampling decision).
 *
 * @example
 * app.use(nervaMiddleware({ traceSink: sink, traceparentFrom: activeTraceparent }));
 */
export function activeTraceparent(): string | null {
  const sc = trace.getSpanContext(context.active());
  if (sc === undefined || !isSpanContextValid(sc)) return null;
  const sampled = (sc.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED;
  return `00-${sc.traceId}-${sc.spanId}-${sampled ? "01" : "00"}`;
}
