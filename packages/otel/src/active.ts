import type { IncomingHttpHeaders } from "node:http";
import { context, isSpanContextValid, trace, TraceFlags } from "@opentelemetry/api";

/**
 * The active OpenTelemetry span as a W3C `traceparent`. Without one, the `traceparent` header of
 * `req` when given (what a bridge does by default), else `null`. Give it to a bridge as
 * `traceparentFrom`, so that Nerva's root span nests under the HTTP server span your
 * OpenTelemetry instrumentation opened for the request (and follows its sampling decision).
 *
 * @example
 * app.use(nervaMiddleware({ traceSink: sink, traceparentFrom: activeTraceparent }));
 */
export function activeTraceparent(req?: { readonly headers: IncomingHttpHeaders }): string | null {
  const sc = trace.getSpanContext(context.active());
  if (sc !== undefined && isSpanContextValid(sc)) {
    const sampled = (sc.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED;
    return `00-${sc.traceId}-${sc.spanId}-${sampled ? "01" : "00"}`;
  }
  const header = req?.headers.traceparent;
  return (Array.isArray(header) ? header[0] : header) ?? null;
}
