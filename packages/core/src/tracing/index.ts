// Public entry of @nerva/core/tracing: trace sinks, the span tree, usage metering, the trace
// store behind the viewer, structured log fields.
export { formatSpanTree } from "./span-tree.js";
export { combineSinks, traceSinkErrors, type TraceSink } from "./sink.js";
export { MemoryTraceSink, type MemoryTraceSinkOptions } from "./memory-sink.js";
export { UsageMeter, type UsageMeterOptions, type UserUsage } from "./usage-meter.js";
export {
  JsonLinesTraceSink,
  type JsonLinesTraceSinkOptions,
  type LineStream,
} from "./json-lines-sink.js";
export {
  logFields,
  type EventLogLine,
  type LogFields,
  type SpanLogLine,
  type UsageLogLine,
} from "./log-fields.js";
export {
  TraceStore,
  type TraceDetail,
  type TraceDetailEvent,
  type TraceDetailSpan,
  type TraceStatus,
  type TraceStoreOptions,
  type TraceSummary,
} from "./trace-store.js";
