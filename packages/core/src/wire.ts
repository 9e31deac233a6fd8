// @nerva/core/wire: the wire format of Nerva's published spec (snake_case, Unix seconds) as zod
// schemas, with converters between it and the in-memory values of @nerva/core. What crosses a
// process, queue or language boundary is checked against these; spec/ holds the JSON Schema
// generated from them. Implementers of workers and of components in other languages need it;
// users of the primitives do not.
export { AgentInputSchema, AgentResultSchema, PartialAgentResultSchema } from "./types/agent.js";
export { PermissionsSchema, type PermissionsWire } from "./types/permissions.js";
export {
  TokenUsageSchema,
  tokenUsageFromWire,
  tokenUsageToWire,
  type TokenUsageWire,
} from "./types/usage.js";
export { EventSchema, SpanSchema, type EventWire, type SpanWire } from "./types/trace.js";
export { ExecContextSchema, MetadataSchema, type ExecContextWire } from "./types/context-wire.js";
export {
  ComponentKindSchema,
  HealthStatusSchema,
  MemoryTierSchema,
  MiddlewareStageSchema,
  ToolStatusSchema,
  componentKindFromWire,
  componentKindToWire,
  healthStatusFromWire,
  healthStatusToWire,
  memoryTierFromWire,
  memoryTierToWire,
  middlewareStageFromWire,
  middlewareStageToWire,
  toolStatusFromWire,
  toolStatusToWire,
  type ComponentKindWire,
  type HealthStatusWire,
  type MemoryTierWire,
  type MiddlewareStageWire,
  type ToolStatusWire,
} from "./wire/components.js";
export {
  ChannelSchema,
  HandlerCandidateSchema,
  ToolSpecSchema,
  channelFromWire,
  channelToWire,
  handlerCandidateFromWire,
  handlerCandidateToWire,
  toolSpecFromWire,
  toolSpecToWire,
  type ChannelWire,
  type HandlerCandidateWire,
  type NamedChannel,
  type ToolSpecInfo,
  type ToolSpecWire,
} from "./wire/component-models.js";
export {
  PolicyDecisionSchema,
  policyDecisionFromWire,
  policyDecisionToWire,
  type PolicyDecisionWire,
  type ReceivedPolicyDecision,
} from "./wire/policy-decision.js";
export { wireSchemas } from "./wire/schemas.js";
export {
  EventFrameSchema,
  SpanFrameSchema,
  WorkerEventSchema,
  WorkerSpanSchema,
  type EventFrame,
  type SpanFrame,
  type WorkerEventWire,
  type WorkerSpanWire,
} from "./runtime/protocol/frames.js";
export { eventToWire } from "./context/events.js";
