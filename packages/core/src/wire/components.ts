// The enums of Nerva's published spec beyond the foundation types, as wire schemas with their
// converters to and from this implementation's own enums. Where the values differ, the wire uses
// the published ones and the converters translate.
import { z } from "zod";
import { ErrorCode, NervaError, parseOrThrow } from "../errors.js";
import type { MemoryQuery } from "../memory/types.js";
import type { MiddlewareStage } from "../middleware/types.js";
import { HealthStatus, type RegistryKind } from "../registry/types.js";
import type { ToolStatus } from "../tools/types.js";

// Each value list is Nerva's, in Nerva's order; `satisfies` ties it to the implementation's enum
// where every wire value has a counterpart there.
const TOOL_STATUSES = [
  "success",
  "error",
  "permission_denied",
  "not_found",
  "timeout",
] as const satisfies readonly ToolStatus[];
type MemoryTierName = NonNullable<MemoryQuery["tiers"]>[number];
const MEMORY_TIERS = ["hot", "warm", "cold"] as const satisfies readonly MemoryTierName[];
const COMPONENT_KINDS = ["agent", "tool", "sense", "plugin"] as const;
const HEALTH_STATUSES = ["healthy", "degraded", "unavailable"] as const;
const MIDDLEWARE_STAGES = [
  "before_route",
  "before_invoke",
  "after_invoke",
  "before_respond",
] as const;

/** Wire schema of ToolStatus: how a tool call ended (the same values as {@link ToolStatus}). */
export const ToolStatusSchema = z.enum(TOOL_STATUSES).meta({
  id: "ToolStatus",
  description:
    "How a tool call ended: success, error, permission_denied (the caller may not use it), not_found (no such tool) or timeout.",
});
export type ToolStatusWire = z.output<typeof ToolStatusSchema>;

/** Wire schema of MemoryTier: hot (recent turns), warm (facts, episodes), cold (similarity). */
export const MemoryTierSchema = z.enum(MEMORY_TIERS).meta({
  id: "MemoryTier",
  description:
    "Storage tier of memory: hot (recent turns of a session), warm (facts and episodes), cold (searched by similarity).",
});
export type MemoryTierWire = z.output<typeof MemoryTierSchema>;

/** Wire schema of ComponentKind: what a registry entry is. This registry has no `sense`. */
export const ComponentKindSchema = z.enum(COMPONENT_KINDS).meta({
  id: "ComponentKind",
  description:
    "What a registered component is: an agent, a tool, a sense (an input processor such as vision) or a plugin.",
});
export type ComponentKindWire = z.output<typeof ComponentKindSchema>;

/** Wire schema of HealthStatus, with Nerva's values (`unavailable`, where this registry says `unhealthy`). */
export const HealthStatusSchema = z.enum(HEALTH_STATUSES).meta({
  id: "HealthStatus",
  description:
    "Operational health of a registered component: healthy, degraded (working with reduced capability) or unavailable (not accepting invocations).",
});
export type HealthStatusWire = z.output<typeof HealthStatusSchema>;

/** Wire schema of MiddlewareStage: the four stages of Nerva's published spec. */
export const MiddlewareStageSchema = z.enum(MIDDLEWARE_STAGES).meta({
  id: "MiddlewareStage",
  description:
    "Where middleware hooks into a request: before_route, before_invoke, after_invoke or before_respond.",
});
export type MiddlewareStageWire = z.output<typeof MiddlewareStageSchema>;

const parseEnum = <S extends z.ZodType>(
  schema: S,
  value: unknown,
  label: string,
  values: readonly string[],
): z.output<S> =>
  parseOrThrow(schema, value, ErrorCode.INVALID_INPUT, label, `Use one of ${values.join(", ")}.`);

/** The typed error for a value with no counterpart on the other side. */
function noCounterpart(label: string, value: unknown, why: string): NervaError {
  return new NervaError(
    ErrorCode.INVALID_INPUT,
    `Invalid ${label}: ${JSON.stringify(value)} ${why}`,
    {
      issues: [{ path: label, message: "no counterpart" }],
    },
  );
}

/**
 * A tool status on the wire. The values are the same as {@link ToolStatus}'s.
 *
 * @example
 * const wire = toolStatusToWire(result.status); // "permission_denied"
 */
export function toolStatusToWire(status: ToolStatus): ToolStatusWire {
  // Typed so that a ToolStatus value the published spec lacks fails to compile here.
  const wire: ToolStatusWire = status;
  return parseEnum(ToolStatusSchema, wire, "toolStatus", TOOL_STATUSES);
}

/**
 * Reads a tool status from the wire; throws `NervaError` INVALID_INPUT for any other value.
 *
 * @example
 * const status = toolStatusFromWire("not_found"); // ToolStatus.NOT_FOUND
 */
export function toolStatusFromWire(wire: unknown): ToolStatus {
  return parseEnum(ToolStatusSchema, wire, "toolStatus", TOOL_STATUSES);
}

/**
 * A memory tier on the wire, as `memory.recall({ tiers })` names it.
 *
 * @example
 * const wire = memoryTierToWire("cold");
 */
export function memoryTierToWire(tier: MemoryTierName): MemoryTierWire {
  const wire: MemoryTierWire = tier;
  return parseEnum(MemoryTierSchema, wire, "memoryTier", MEMORY_TIERS);
}

/**
 * Reads a memory tier from the wire; throws `NervaError` INVALID_INPUT for any other value.
 *
 * @example
 * await memory.recall({ text: "Berlin", tiers: [memoryTierFromWire("cold")] }, ctx);
 */
export function memoryTierFromWire(wire: unknown): MemoryTierName {
  return parseEnum(MemoryTierSchema, wire, "memoryTier", MEMORY_TIERS);
}

/**
 * A registry kind on the wire. Every {@link RegistryKind} is a ComponentKind of the same name.
 *
 * @example
 * const wire = componentKindToWire(entry.kind); // "agent"
 */
export function componentKindToWire(kind: RegistryKind): ComponentKindWire {
  const wire: ComponentKindWire = kind;
  return parseEnum(ComponentKindSchema, wire, "componentKind", COMPONENT_KINDS);
}

/**
 * Reads a ComponentKind into a {@link RegistryKind}. `sense` is valid on the wire but this
 * registry has no such kind: it throws `NervaError` INVALID_INPUT saying so, as does any value
 * that is not a ComponentKind.
 *
 * @example
 * const kind = componentKindFromWire("tool"); // "tool"
 */
export function componentKindFromWire(wire: unknown): RegistryKind {
  const kind = parseEnum(ComponentKindSchema, wire, "componentKind", COMPONENT_KINDS);
  if (kind === "sense") {
    throw noCounterpart(
      "componentKind",
      kind,
      "has no counterpart in this registry, which catalogues agent, tool and plugin. Skip sense entries.",
    );
  }
  return kind;
}

/**
 * A registry health on the wire: `healthy` and `degraded` as they are, `unhealthy` as
 * `unavailable`, and `unknown` (nobody reported yet) as `null`, since the published spec has no
 * such value: leave the field out.
 *
 * @example
 * const wire = healthStatusToWire(entry.health); // "unavailable" for "unhealthy"
 */
export function healthStatusToWire(health: HealthStatus): HealthStatusWire | null {
  switch (health) {
    case HealthStatus.HEALTHY:
    case HealthStatus.DEGRADED:
      return health;
    case HealthStatus.UNHEALTHY:
      return "unavailable";
    case HealthStatus.UNKNOWN:
      return null;
  }
  throw noCounterpart(
    "health",
    health,
    "is not a HealthStatus. Use healthy, degraded, unhealthy or unknown.",
  );
}

/**
 * Reads a HealthStatus into this registry's {@link HealthStatus}: `unavailable` becomes
 * `unhealthy`, and `null` or `undefined` (the field left out) becomes `unknown`. Any other value
 * throws `NervaError` INVALID_INPUT.
 *
 * @example
 * const health = healthStatusFromWire(payload.health); // "unknown" when absent
 */
export function healthStatusFromWire(wire: unknown): HealthStatus {
  if (wire === null || wire === undefined) return HealthStatus.UNKNOWN;
  const health = parseEnum(HealthStatusSchema, wire, "health", HEALTH_STATUSES);
  return health === "unavailable" ? HealthStatus.UNHEALTHY : health;
}

/**
 * A middleware stage on the wire. The four stages of the published spec keep their (snake_case)
 * names; this implementation's other stages (`after_route`, `on_error`) have no counterpart and
 * throw `NervaError` INVALID_INPUT, as does any value that is not a snake_case stage.
 *
 * @example
 * const wire = middlewareStageToWire("before_invoke");
 */
export function middlewareStageToWire(
  stage: MiddlewareStage | MiddlewareStageWire,
): MiddlewareStageWire {
  const parsed = MiddlewareStageSchema.safeParse(stage);
  if (parsed.success) return parsed.data;
  throw noCounterpart(
    "middlewareStage",
    stage,
    `has no counterpart in Nerva's published spec. Only ${MIDDLEWARE_STAGES.join(", ")} can be sent.`,
  );
}

/**
 * Reads a middleware stage from the wire (the value is the same snake_case name in TypeScript);
 * throws `NervaError` INVALID_INPUT for any other value.
 *
 * @example
 * const stage = middlewareStageFromWire("after_invoke");
 */
export function middlewareStageFromWire(wire: unknown): MiddlewareStageWire {
  return parseEnum(MiddlewareStageSchema, wire, "middlewareStage", MIDDLEWARE_STAGES);
}
