import type { z } from "zod";
import { AgentInputSchema, AgentResultSchema } from "../types/agent.js";
import { ChannelSchema, HandlerCandidateSchema, ToolSpecSchema } from "./component-models.js";
import {
  ComponentKindSchema,
  HealthStatusSchema,
  MemoryTierSchema,
  MiddlewareStageSchema,
  ToolStatusSchema,
} from "./components.js";
import { ExecContextSchema } from "../types/context-wire.js";
import { EventFrameSchema, SpanFrameSchema } from "../runtime/protocol/frames.js";
import { PermissionsSchema } from "../types/permissions.js";
import { PolicyDecisionSchema } from "./policy-decision.js";
import { AGENT_STATUSES, SCOPES } from "../types/status.js";
import { EventSchema, SpanSchema } from "../types/trace.js";
import { TokenUsageSchema } from "../types/usage.js";
import { z as zod } from "zod";

const AgentStatusSchema = zod
  .enum(AGENT_STATUSES)
  .meta({ id: "AgentStatus", description: "Outcome of one agent invocation." });
const ScopeSchema = zod
  .enum(SCOPES)
  .meta({ id: "Scope", description: "Which identity memory is keyed by." });

/**
 * Every wire type by name: the source of the JSON Schema files in `spec/` and of the
 * conformance cases. Each schema validates the snake_case JSON form.
 *
 * @example
 * const parsed = wireSchemas.AgentResult.parse(JSON.parse(stdout));
 */
export const wireSchemas = {
  AgentInput: AgentInputSchema,
  AgentResult: AgentResultSchema,
  AgentStatus: AgentStatusSchema,
  Scope: ScopeSchema,
  Permissions: PermissionsSchema,
  TokenUsage: TokenUsageSchema,
  Span: SpanSchema,
  Event: EventSchema,
  ExecContext: ExecContextSchema,
  HandlerCandidate: HandlerCandidateSchema,
  ToolStatus: ToolStatusSchema,
  ToolSpec: ToolSpecSchema,
  MemoryTier: MemoryTierSchema,
  ComponentKind: ComponentKindSchema,
  HealthStatus: HealthStatusSchema,
  MiddlewareStage: MiddlewareStageSchema,
  Channel: ChannelSchema,
  PolicyDecision: PolicyDecisionSchema,
  SpanFrame: SpanFrameSchema,
  EventFrame: EventFrameSchema,
} as const satisfies Record<string, z.ZodType>;
