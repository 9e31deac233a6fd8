// Public entry of @nerva/core, grouped by primitive. Anything not exported here is internal.

// Errors
export {
  ERROR_POLICY,
  ErrorCode,
  NervaError,
  UnrecoverableError,
  isNervaError,
  parseOrThrow,
  type AnyNervaError,
  type ErrorDetails,
  type ErrorDetailsByCode,
  type ErrorPolicy,
  type NervaErrorOptions,
  type ValidationIssue,
} from "./errors.js";

// Value types (their zod schemas and wire converters are at @nerva/core/wire)
export { AgentStatus, Scope } from "./types/status.js";
export {
  agentResult,
  createAgentInput,
  parseAgentResult,
  type AgentInput,
  type AgentInputInit,
  type AgentResult,
  type JsonValue,
  type PartialAgentResult,
} from "./types/agent.js";
export { Permissions, type PermissionsInit } from "./types/permissions.js";
export type { SpanUsage, TokenUsage, TokenUsageDelta } from "./types/usage.js";
export { SpanStatus, type AttributeValue, type Attributes } from "./types/trace.js";

// ExecContext
export {
  ExecContext,
  type ChildOptions,
  type ContextEvent,
  type ExecContextOptions,
  type ForkOptions,
  type FromWireOptions,
  type StartSpanOptions,
  type StreamSink,
  type ToWireOptions,
} from "./context/exec-context.js";
export { isExecContext } from "./context/check.js";
export { ContextKey } from "./context/local.js";
export { Span, SpanKind, isSpan, type SpanParent } from "./context/span.js";
export {
  formatTraceparent,
  newRequestId,
  newSpanId,
  newTraceId,
  parseTraceparent,
  type TraceParent,
} from "./context/ids.js";

// Runtimes
export type {
  AgentHandler,
  AgentRuntime,
  DelegationPolicy,
  DelegationRequest,
  HandlerReturn,
} from "./runtime/types.js";
export {
  InProcessRuntime,
  type HandlerOptions,
  type RuntimeOptions,
} from "./runtime/in-process-runtime.js";
export {
  CircuitBreaker,
  CircuitState,
  type CircuitBreakerOptions,
  type CircuitPermit,
  type CircuitSnapshot,
} from "./runtime/circuit-breaker.js";

// Tracing
export { formatSpanTree } from "./tracing/span-tree.js";
export { combineSinks, traceSinkErrors, type TraceSink } from "./tracing/sink.js";
export { MemoryTraceSink, type MemoryTraceSinkOptions } from "./tracing/memory-sink.js";
export { UsageMeter, type UsageMeterOptions, type UserUsage } from "./tracing/usage-meter.js";
export {
  JsonLinesTraceSink,
  type JsonLinesTraceSinkOptions,
  type LineStream,
} from "./tracing/json-lines-sink.js";
export {
  logFields,
  type EventLogLine,
  type LogFields,
  type SpanLogLine,
  type UsageLogLine,
} from "./tracing/log-fields.js";
export {
  TraceStore,
  type TraceDetail,
  type TraceDetailEvent,
  type TraceDetailSpan,
  type TraceStatus,
  type TraceStoreOptions,
  type TraceSummary,
} from "./tracing/trace-store.js";

// Router, tools, responder
export type {
  ClassifyOptions,
  HandlerDescription,
  RouteCandidate,
  RouteResult,
  Router,
} from "./router/types.js";
export { RuleRouter, type RouteRule, type RuleRouterOptions } from "./router/rule-router.js";
export {
  EmbeddingRouter,
  type EmbedFunction,
  type EmbeddingRouterOptions,
} from "./router/embedding-router.js";
export { LlmRouter, type LlmClassifyFunction, type LlmRouterOptions } from "./router/llm-router.js";
export { HybridRouter, type HybridRouterOptions } from "./router/hybrid-router.js";
export {
  ToolStatus,
  type JsonSchema,
  type ToolInfo,
  type ToolManager,
  type ToolResult,
} from "./tools/types.js";
export {
  FunctionToolManager,
  defineTool,
  type FunctionTool,
  type FunctionToolManagerOptions,
  type ToolCallContext,
} from "./tools/function-tool-manager.js";
export { CompositeToolManager } from "./tools/composite-tool-manager.js";
export type { Channel, ChannelSpec, FormattedResponse, Responder } from "./responder/types.js";
export { PassthroughResponder } from "./responder/passthrough-responder.js";
export {
  ChannelResponder,
  MIN_MAX_LENGTH,
  type ChannelResponderOptions,
} from "./responder/channel-responder.js";
export { clientData, clientError, failureText } from "./responder/failure-text.js";
export { stripMarkdown } from "./responder/plain-text.js";

// Memory, registry, policy, middleware, orchestrator
export {
  MemoryKind,
  type Memory,
  type MemoryEventInit,
  type MemoryItem,
  type MemoryQuery,
  type MemoryRead,
  type MemoryReadResult,
  type MemoryRecall,
  type MemoryStore,
  type MemoryWrite,
  type ScoredMemoryItem,
  type TurnRole,
} from "./memory/types.js";
export { memoryNamespace, type MemoryNamespace } from "./memory/namespace.js";
export { TieredMemory, type TieredMemoryOptions } from "./memory/tiered-memory.js";
export { InMemoryMemoryStore } from "./memory/in-memory-store.js";
export {
  HealthStatus,
  RegistryKind,
  type DiscoverFilter,
  type InvocationRecord,
  type InvocationStats,
  type Registry,
  type RegistryEntry,
  type RegistryEntryInit,
} from "./registry/types.js";
export { InMemoryRegistry } from "./registry/in-memory-registry.js";
export type { RegistryOptions } from "./registry/shared.js";
export {
  ApprovalStatus,
  Checkpoint,
  PolicyEffect,
  type Approval,
  type ApprovalStore,
  type PolicyAction,
  type PolicyDecision,
  type PolicyEngine,
} from "./policy/types.js";
export {
  DeclarativePolicyEngine,
  type DeclarativePolicyOptions,
} from "./policy/declarative-engine.js";
export { NoopPolicyEngine } from "./policy/noop-engine.js";
export { InMemoryApprovalStore } from "./policy/approvals.js";
export { decisionError, policyDelegation } from "./policy/decision.js";
export {
  PolicyDocumentSchema,
  loadPolicyFile,
  parsePolicyDocument,
  parsePolicyText,
  type PolicyDocument,
  type PolicyDocumentInit,
} from "./policy/document.js";
export {
  MiddlewareStage,
  type InvocationRequest,
  type Middleware,
  type OrchestratorResponse,
  type PipelineStage,
} from "./middleware/types.js";
export { MiddlewarePipeline, type StagePayloads } from "./middleware/pipeline.js";
export {
  LoggingMiddleware,
  type LogRecord,
  type LoggingMiddlewareOptions,
} from "./middleware/logging.js";
export {
  MetricsMiddleware,
  type MetricLabels,
  type MetricsMiddlewareOptions,
} from "./middleware/metrics.js";
export {
  InputSizeLimitMiddleware,
  type InputSizeLimitOptions,
} from "./middleware/input-size-limit.js";
export { Orchestrator } from "./orchestrator/orchestrator.js";
export type {
  AgentKit,
  HandleOptions,
  KitHandler,
  OrchestratorOptions,
  OrchestratorStream,
} from "./orchestrator/types.js";

// The subprocess runtime is at @nerva/core/subprocess and the worker protocol (frame schemas,
// codecs, serveWorker) at @nerva/core/protocol: only implementers of workers need them.

// Durable runs
export {
  FINAL_EVENT_TYPES,
  RunEventType,
  RunStatus,
  isFinalStatus,
  type RetryPolicy,
  type RunError,
  type RunEvent,
  type RunInput,
  type RunLease,
  type RunPage,
  type RunPause,
  type RunRecord,
} from "./runs/types.js";
export type {
  ClaimRequest,
  ClaimedRun,
  LeaseRef,
  NewRun,
  RunListQuery,
  RunOutcome,
  RunStore,
} from "./runs/store.js";
export { RunQueue } from "./runs/run-queue.js";
export { Runner } from "./runs/runner.js";
export {
  clientRun,
  clientRunError,
  clientRunEvent,
  type ClientRun,
  type ClientRunResult,
} from "./client-view.js";
export { InMemoryRunStore } from "./runs/memory/in-memory-store.js";
export { RunPaused, type RunContext, type WaitForInputOptions } from "./runs/run-context.js";
export { retryDelaySeconds } from "./runs/backoff.js";
export {
  EnqueueOptionsSchema,
  RetryOptionsSchema,
  RunQueueOptionsSchema,
  RunnerOptionsSchema,
  type EnqueueOptions,
  type EventsOptions,
  type ListOptions,
  type RetryOptions,
  type RunQueueOptions,
  type RunnerOptions,
  type WaitOptions,
} from "./runs/options.js";

// Agent graphs and the runner (built on durable runs): defineGraph, nodes, GraphHost, events
export * from "./graph/index.js";
