// Public entry of @nerva/otel. Anything not exported here is internal.

// The sink
export { createOtelSink, type OtelSink } from "./otel-sink.js";
export type { OtelSinkOptions } from "./options.js";
export type { OtlpProtocol } from "./exporter.js";

// NodeSDK in one call
export { startNervaOtel, type NervaOtel, type StartNervaOtelOptions } from "./start.js";

// Joining the app's own traces
export { activeTraceparent } from "./active.js";
