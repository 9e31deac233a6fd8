import { combineSinks, type TraceSink } from "@nerva/core/tracing";

/**
 * The one trace sink for an app's bridge from those that are switched on (the trace viewer's
 * store, the OpenTelemetry exporter), or `undefined` when none is.
 *
 * @example
 * const traceSink = oneSink(traceUI?.traceSink, otel?.traceSink);
 */
export function oneSink(...sinks: (TraceSink | undefined)[]): TraceSink | undefined {
  const on = sinks.filter((s): s is TraceSink => s !== undefined);
  return on.length <= 1 ? on[0] : combineSinks(...on);
}
