// Where spans go, beyond the TraceSink interface itself (which the context needs, so it lives in
// context/trace-sink.ts): combining sinks. The interface and its guard are re-exported here for the
// floors above the context that configure sinks.
import type { Span } from "../context/span.js";
import { guardSink, type TraceSink } from "../context/trace-sink.js";

export { isTraceSink, traceSinkErrors, type TraceSink } from "../context/trace-sink.js";

/**
 * One sink that passes everything to each of `sinks`, in order. Each sink is guarded on its own:
 * one that throws does not stop the others, its first error goes to its own `onError` (or one
 * process warning), and `traceSinkErrors(thatSink)` counts it, exactly as if it were the context's
 * only sink. `runInSpan` nests the sinks' own; `forceFlush` and `shutdown` wait for all and reject
 * if any did.
 *
 * @example
 * const sink = combineSinks(new TraceStore(), new JsonLinesTraceSink(), createOtelSink());
 */
export function combineSinks(...sinks: TraceSink[]): TraceSink {
  const guards = sinks.map((s, i) => guardSink(s, `sinks[${i}]`)); // validates each
  const all = async (method: "forceFlush" | "shutdown"): Promise<void> => {
    const results = await Promise.allSettled(sinks.map((s) => s[method]?.()));
    const failed = results.find((r) => r.status === "rejected");
    if (failed !== undefined) throw failed.reason;
  };
  const runners = guards.filter((g) => typeof g.inner.runInSpan === "function");
  return {
    onSpanStart: (span) => guards.forEach((g) => g.spanStart(span)),
    onSpanEnd: (span) => guards.forEach((g) => g.spanEnd(span)),
    onEvent: (event) => guards.forEach((g) => g.event(event)),
    runInSpan: <T>(span: Span, fn: () => T): T =>
      runners.reduceRight<() => T>((next, g) => () => g.run(span, next), fn)(),
    forceFlush: () => all("forceFlush"),
    shutdown: () => all("shutdown"),
  };
}
