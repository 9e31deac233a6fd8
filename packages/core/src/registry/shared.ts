import { z } from "zod";
import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError, parseOrThrow } from "../errors.js";
import { checkUntrustedJson } from "../internal/json-limits.js";
import { checkContext } from "../runtime/guard.js";
import type { Attributes } from "../types/trace.js";
import {
  HealthStatus,
  RegistryKind,
  type DiscoverFilter,
  type InvocationRecord,
  type InvocationStats,
  type RegistryEntry,
} from "./types.js";

const KINDS = [RegistryKind.AGENT, RegistryKind.TOOL, RegistryKind.PLUGIN] as const;
const HEALTH = [
  HealthStatus.HEALTHY,
  HealthStatus.DEGRADED,
  HealthStatus.UNHEALTHY,
  HealthStatus.UNKNOWN,
] as const;
const label = z.string().min(1).max(256);

export const RegistryOptionsSchema = z
  .object({
    /** Consecutive failed invocations after which an entry is marked unhealthy; 0 disables. */
    unhealthyAfterFailures: z.number().int().min(0).max(1_000_000).default(3),
  })
  .strict();
/** Options shared by every registry. */
export type RegistryOptions = z.input<typeof RegistryOptionsSchema>;

const EntryInitSchema = z
  .object({
    kind: z.enum(KINDS),
    name: label,
    description: z.string().max(4000).default(""),
    version: z.string().min(1).max(64).optional(),
    tags: z.array(label).max(64).default([]),
    requiredRoles: z.array(label).max(64).default([]),
    metadata: z.record(z.string(), z.json()).default({}),
  })
  .strict();
export type ParsedEntryInit = z.output<typeof EntryInitSchema>;

const FilterSchema = z
  .object({
    kind: z.enum(KINDS).optional(),
    tags: z.array(label).optional(),
    health: z.array(z.enum(HEALTH)).optional(),
  })
  .strict();

const RecordSchema = z
  .object({
    ok: z.boolean(),
    latencyMs: z.number().nonnegative().finite(),
    error: z.string().max(4000).optional(),
  })
  .strict();

export function parseOptions(options: unknown): z.output<typeof RegistryOptionsSchema> {
  return parseOrThrow(
    RegistryOptionsSchema,
    options,
    ErrorCode.INVALID_OPTIONS,
    "options",
    "unhealthyAfterFailures is a whole number >= 0 (0 disables automatic health).",
  );
}

export function parseEntry(entry: unknown): ParsedEntryInit {
  // The schema and the copy of metadata recurse: bound its depth and size first, iteratively.
  if (typeof entry === "object" && entry !== null && "metadata" in entry) {
    checkUntrustedJson(
      (entry as { metadata: unknown }).metadata,
      "entry.metadata",
      "Register flatter metadata: at most 64 levels of nesting and a million values.",
    );
  }
  return parseOrThrow(
    EntryInitSchema,
    entry,
    ErrorCode.INVALID_INPUT,
    "entry",
    'Pass { kind: "agent" | "tool" | "plugin", name, description?, version?, tags?, requiredRoles?, metadata? }.',
  );
}

export function parseFilter(filter: unknown): DiscoverFilter {
  return parseOrThrow(
    FilterSchema,
    filter,
    ErrorCode.INVALID_INPUT,
    "filter",
    "Pass { kind?, tags?: string[], health?: HealthStatus[] }.",
  );
}

export function parseRecord(record: unknown): InvocationRecord {
  return parseOrThrow(
    RecordSchema,
    record,
    ErrorCode.INVALID_INPUT,
    "record",
    "Pass { ok: boolean, latencyMs: number >= 0, error?: string }.",
  );
}

const KeySchema = z.object({ kind: z.enum(KINDS), name: z.string().min(1) });
const HealthSchema = z.enum(HEALTH);

/** Validates the (kind, name) key of a call. */
export function parseKey(kind: unknown, name: unknown): void {
  // The common case needs no schema run; bad values get the schema's field-naming error.
  if (
    (kind === "agent" || kind === "tool" || kind === "plugin") &&
    typeof name === "string" &&
    name !== ""
  ) {
    return;
  }
  parseOrThrow(
    KeySchema,
    { kind, name },
    ErrorCode.INVALID_INPUT,
    "arguments",
    'Pass a kind ("agent", "tool" or "plugin") and the registered name.',
  );
}

export function parseHealth(health: unknown): HealthStatus {
  return parseOrThrow(
    HealthSchema,
    health,
    ErrorCode.INVALID_INPUT,
    "health",
    "Use healthy, degraded, unhealthy or unknown.",
  );
}

export function notFound(kind: string, name: string): NervaError {
  return new NervaError(
    ErrorCode.NOT_FOUND,
    `No ${kind} "${name}" is registered. Register it first with registry.register({ kind: "${kind}", name: "${name}" }, ctx).`,
    { details: { kind, name } },
  );
}

/** Whether `ctx` may see `entry`: the agent/tool allowlist, then every required role. */
export function visible(entry: RegistryEntry, ctx: ExecContext): boolean {
  const p = ctx.permissions;
  if (entry.kind === RegistryKind.AGENT && !p.canUseAgent(entry.name)) return false;
  if (entry.kind === RegistryKind.TOOL && !p.canUseTool(entry.name)) return false;
  for (const role of entry.requiredRoles) if (!p.hasRole(role)) return false;
  return true;
}

export function matches(entry: RegistryEntry, filter: DiscoverFilter): boolean {
  if (filter.kind !== undefined && entry.kind !== filter.kind) return false;
  if (filter.health !== undefined && !filter.health.includes(entry.health)) return false;
  if (filter.tags !== undefined && !filter.tags.every((t) => entry.tags.includes(t))) return false;
  return true;
}

export function byKindThenName(a: RegistryEntry, b: RegistryEntry): number {
  return a.kind < b.kind
    ? -1
    : a.kind > b.kind
      ? 1
      : a.name < b.name
        ? -1
        : a.name > b.name
          ? 1
          : 0;
}

/** Mutable running aggregates plus the health fields they drive. */
export interface StatsState {
  count: number;
  failures: number;
  consecutiveFailures: number;
  totalLatencyMs: number;
  minLatencyMs: number | null;
  maxLatencyMs: number | null;
  lastLatencyMs: number | null;
  lastInvokedAt: number | null;
  lastError: string | null;
  health: HealthStatus;
  healthDetail: string | null;
  /** Whether `health` was set by the automatic rule (a manual report is never overridden). */
  healthAuto: boolean;
}

export function emptyStats(): StatsState {
  return {
    count: 0,
    failures: 0,
    consecutiveFailures: 0,
    totalLatencyMs: 0,
    minLatencyMs: null,
    maxLatencyMs: null,
    lastLatencyMs: null,
    lastInvokedAt: null,
    lastError: null,
    health: HealthStatus.UNKNOWN,
    healthDetail: null,
    healthAuto: true,
  };
}

/**
 * Adds one invocation to `s` in place: O(1). A failure streak of `threshold` marks the entry
 * unhealthy; a success clears an automatic (not a manually reported) unhealthy or unknown status.
 */
export function applyInvocation(
  s: StatsState,
  record: InvocationRecord,
  threshold: number,
  now: number,
): void {
  const ms = record.latencyMs;
  s.count += 1;
  s.totalLatencyMs += ms;
  s.minLatencyMs = s.minLatencyMs === null ? ms : Math.min(s.minLatencyMs, ms);
  s.maxLatencyMs = s.maxLatencyMs === null ? ms : Math.max(s.maxLatencyMs, ms);
  s.lastLatencyMs = ms;
  s.lastInvokedAt = now;
  if (record.ok) {
    s.consecutiveFailures = 0;
    if (
      s.health === HealthStatus.UNKNOWN ||
      (s.healthAuto && s.health === HealthStatus.UNHEALTHY)
    ) {
      s.health = HealthStatus.HEALTHY;
      s.healthDetail = null;
      s.healthAuto = true;
    }
    return;
  }
  s.failures += 1;
  s.consecutiveFailures += 1;
  s.lastError = record.error ?? "failed";
  if (threshold > 0 && s.consecutiveFailures >= threshold && s.health !== HealthStatus.UNHEALTHY) {
    s.health = HealthStatus.UNHEALTHY;
    s.healthDetail = `${s.consecutiveFailures} consecutive failed invocations (last: ${s.lastError})`;
    s.healthAuto = true;
  }
}

export function statsView(s: StatsState): InvocationStats {
  return Object.freeze({
    count: s.count,
    failures: s.failures,
    consecutiveFailures: s.consecutiveFailures,
    totalLatencyMs: s.totalLatencyMs,
    meanLatencyMs: s.count === 0 ? 0 : s.totalLatencyMs / s.count,
    minLatencyMs: s.minLatencyMs,
    maxLatencyMs: s.maxLatencyMs,
    lastLatencyMs: s.lastLatencyMs,
    lastInvokedAt: s.lastInvokedAt,
    lastError: s.lastError,
  });
}

export function entryView(
  init: ParsedEntryInit,
  s: Pick<StatsState, "health" | "healthDetail">,
  registeredAt: number,
  updatedAt: number,
): RegistryEntry {
  return Object.freeze({
    kind: init.kind,
    name: init.name,
    description: init.description,
    version: init.version ?? null,
    tags: Object.freeze([...init.tags]),
    requiredRoles: Object.freeze([...init.requiredRoles]),
    metadata: Object.freeze(structuredClone(init.metadata)) as RegistryEntry["metadata"],
    health: s.health,
    healthDetail: s.healthDetail,
    registeredAt,
    updatedAt,
  });
}

/**
 * Runs `fn` inside a `registry.<op>` span on `ctx` (ended `error` when `fn` throws). Validates
 * `ctx` first.
 */
export async function inSpan<T>(
  ctx: ExecContext,
  op: string,
  attributes: Attributes,
  fn: () => T | Promise<T>,
): Promise<T> {
  checkContext(ctx);
  const span = ctx.startSpan(`registry.${op}`, attributes);
  try {
    const value = await fn();
    span.end("ok");
    return value;
  } catch (err) {
    span.end("error", err instanceof Error ? err.message : String(err));
    throw err;
  }
}
