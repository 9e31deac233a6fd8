import type { ExecContext } from "../context/exec-context.js";
import type { JsonValue } from "../types/agent.js";

/** What a registry catalogues. */
export const RegistryKind = {
  AGENT: "agent",
  TOOL: "tool",
  PLUGIN: "plugin",
} as const;
export type RegistryKind = (typeof RegistryKind)[keyof typeof RegistryKind];

/**
 * Health of a registered entry. `unknown` until someone reports; `unhealthy` is also set
 * automatically after `unhealthyAfterFailures` consecutive failed invocations.
 *
 * @example
 * await registry.setHealth("agent", "flight_agent", HealthStatus.DEGRADED, ctx, "slow upstream");
 */
export const HealthStatus = {
  HEALTHY: "healthy",
  DEGRADED: "degraded",
  UNHEALTHY: "unhealthy",
  UNKNOWN: "unknown",
} as const;
export type HealthStatus = (typeof HealthStatus)[keyof typeof HealthStatus];

/**
 * What `register` accepts. Registering the same kind and name again updates the description and
 * metadata and keeps health and stats.
 *
 * @example
 * await registry.register({ kind: "agent", name: "flight_agent", description: "Books flights", tags: ["travel"] }, ctx);
 */
export interface RegistryEntryInit {
  readonly kind: RegistryKind;
  readonly name: string;
  readonly description?: string;
  readonly version?: string;
  readonly tags?: readonly string[];
  /** Discovery shows the entry only to contexts holding every one of these roles. */
  readonly requiredRoles?: readonly string[];
  readonly metadata?: Readonly<Record<string, JsonValue>>;
}

/** A registered agent, tool or plugin. */
export interface RegistryEntry {
  readonly kind: RegistryKind;
  readonly name: string;
  readonly description: string;
  readonly version: string | null;
  readonly tags: readonly string[];
  readonly requiredRoles: readonly string[];
  readonly metadata: Readonly<Record<string, JsonValue>>;
  readonly health: HealthStatus;
  /** Why the health is what it is (the reporter's note, or the automatic rule). */
  readonly healthDetail: string | null;
  /** Epoch milliseconds. */
  readonly registeredAt: number;
  readonly updatedAt: number;
}

/**
 * Running aggregates of an entry's invocations. Kept up to date on every record, so reading them
 * costs the same whatever the history length.
 */
export interface InvocationStats {
  readonly count: number;
  readonly failures: number;
  readonly consecutiveFailures: number;
  readonly totalLatencyMs: number;
  /** `totalLatencyMs / count`, 0 before the first invocation. */
  readonly meanLatencyMs: number;
  readonly minLatencyMs: number | null;
  readonly maxLatencyMs: number | null;
  readonly lastLatencyMs: number | null;
  /** Epoch milliseconds of the last invocation. */
  readonly lastInvokedAt: number | null;
  readonly lastError: string | null;
}

/** One invocation to add to an entry's stats. */
export interface InvocationRecord {
  readonly ok: boolean;
  readonly latencyMs: number;
  readonly error?: string;
}

/**
 * Narrows `discover`. Every given field must match.
 *
 * @example
 * await registry.discover(ctx, { kind: "agent", health: ["healthy", "unknown"], tags: ["travel"] });
 */
export interface DiscoverFilter {
  readonly kind?: RegistryKind;
  /** Entries carrying every one of these tags. */
  readonly tags?: readonly string[];
  /** Entries whose health is one of these. */
  readonly health?: readonly HealthStatus[];
}

/**
 * The catalog of agents, tools and plugins. `discover`, `get` and `stats` show only entries the
 * context may use (`canUseAgent` for agents, `canUseTool` for tools, `requiredRoles` for all);
 * every method records a `registry.*` span on the context.
 *
 * @example
 * await registry.register({ kind: "tool", name: "search_flights" }, ctx);
 * await registry.recordInvocation("tool", "search_flights", { ok: true, latencyMs: 120 }, ctx);
 * const visible = await registry.discover(ctx, { kind: "tool" });
 */
export interface Registry {
  register(entry: RegistryEntryInit, ctx: ExecContext): Promise<RegistryEntry>;
  /** `true` when the entry existed. Its stats go with it. */
  unregister(kind: RegistryKind, name: string, ctx: ExecContext): Promise<boolean>;
  /** The entry, or `null` when it does not exist or the context may not see it. */
  get(kind: RegistryKind, name: string, ctx: ExecContext): Promise<RegistryEntry | null>;
  /** Visible entries matching `filter`, ordered by kind then name. */
  discover(ctx: ExecContext, filter?: DiscoverFilter): Promise<RegistryEntry[]>;
  /** Throws NervaError NOT_FOUND for an unknown entry. */
  setHealth(
    kind: RegistryKind,
    name: string,
    health: HealthStatus,
    ctx: ExecContext,
    detail?: string,
  ): Promise<RegistryEntry>;
  /** Adds one invocation to the running aggregates; throws NOT_FOUND for an unknown entry. */
  recordInvocation(
    kind: RegistryKind,
    name: string,
    record: InvocationRecord,
    ctx: ExecContext,
  ): Promise<InvocationStats>;
  /** Current aggregates, or `null` when the entry does not exist or is not visible. */
  stats(kind: RegistryKind, name: string, ctx: ExecContext): Promise<InvocationStats | null>;
  close(): Promise<void>;
}
