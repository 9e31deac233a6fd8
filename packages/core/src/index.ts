// Public entry of @nerva/core: what a first app needs — errors, the context, a runtime, the
// orchestrator, durable runs and graphs. Each subsystem's subpath holds all of it, these
// names included: @nerva/core/context, /runtime, /router, /tools, /responder, /memory,
// /registry, /policy, /middleware, /tracing, /runs, /graph, /http (docs/concepts.md says which).

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

// The context and the values it carries
export {
  AgentStatus,
  ExecContext,
  Permissions,
  Scope,
  agentResult,
  createAgentInput,
  type AgentInput,
  type AgentResult,
  type ExecContextOptions,
  type JsonValue,
  type StreamSink,
  type TokenUsage,
} from "./context/index.js";

// Running agents: a runtime, the orchestrator, a router and tools
export {
  InProcessRuntime,
  type AgentHandler,
  type AgentRuntime,
  type HandlerReturn,
  type RuntimeOptions,
} from "./runtime/index.js";
export { Orchestrator } from "./orchestrator/orchestrator.js";
export type {
  AgentKit,
  HandleOptions,
  KitHandler,
  OrchestratorOptions,
  OrchestratorStream,
} from "./orchestrator/types.js";
export type { OrchestratorResponse } from "./middleware/index.js";
export { RuleRouter, type RouteRule, type Router } from "./router/index.js";
export {
  FunctionToolManager,
  defineTool,
  type FunctionTool,
  type ToolManager,
  type ToolResult,
} from "./tools/index.js";

// Durable runs (SqliteRunStore and RedisRunStore at @nerva/core/sqlite and /redis)
export {
  InMemoryRunStore,
  RunEventType,
  RunQueue,
  RunStatus,
  Runner,
  type EnqueueOptions,
  type RunContext,
  type RunEvent,
  type RunPause,
  type RunQueueOptions,
  type RunRecord,
  type RunStore,
  type RunnerOptions,
  type WaitForInputOptions,
} from "./runs/index.js";

// Graphs
export {
  END,
  GraphHost,
  Reducers,
  agentNode,
  defineGraph,
  fnNode,
  inputNode,
  type Graph,
  type GraphHostOptions,
  type GraphRun,
  type GraphState,
  type NodeContext,
  type StateSchema,
} from "./graph/index.js";
