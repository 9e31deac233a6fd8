// Public entry of @nerva/core/middleware: the orchestrator's middleware stages and the built-in
// middleware (logging, metrics, input size limits).
export {
  MiddlewareStage,
  type InvocationRequest,
  type Middleware,
  type OrchestratorResponse,
  type PipelineStage,
} from "./types.js";
export { MiddlewarePipeline, type StagePayloads } from "./pipeline.js";
export { LoggingMiddleware, type LogRecord, type LoggingMiddlewareOptions } from "./logging.js";
export { MetricsMiddleware, type MetricLabels, type MetricsMiddlewareOptions } from "./metrics.js";
export { InputSizeLimitMiddleware, type InputSizeLimitOptions } from "./input-size-limit.js";
