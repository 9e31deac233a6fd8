// Public entry of @nerva/core/context: the ExecContext and everything around it — spans, ids,
// request-local slots — and the value types it carries.
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
} from "./exec-context.js";
export { isExecContext } from "./check.js";
export { ContextKey } from "./local.js";
export { Span, SpanKind, isSpan, type SpanParent } from "./span.js";
export {
  formatTraceparent,
  newRequestId,
  newSpanId,
  newTraceId,
  parseTraceparent,
  type TraceParent,
} from "./ids.js";

// Value types (their zod schemas and wire converters are at @nerva/core/wire)
export { AgentStatus, Scope } from "../types/status.js";
export {
  agentResult,
  createAgentInput,
  parseAgentResult,
  type AgentInput,
  type AgentInputInit,
  type AgentResult,
  type JsonValue,
  type PartialAgentResult,
} from "../types/agent.js";
export { Permissions, type PermissionsInit } from "../types/permissions.js";
export type { SpanUsage, TokenUsage, TokenUsageDelta } from "../types/usage.js";
export { SpanStatus, type AttributeValue, type Attributes } from "../types/trace.js";
