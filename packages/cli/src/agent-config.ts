import { ErrorCode, NervaError } from "@nerva/core";

/** Where an agent module's runs live: in memory (the default) or in a SQLite file. */
export type StoreConfig = "memory" | { readonly sqlite: string };

/**
 * The `config` export of an agent module (`AgentRunner.load` options win over it).
 *
 * @example
 * export const config: AgentConfig = { store: { sqlite: "runs.db" }, concurrency: 4 };
 */
export interface AgentConfig {
  /** Where runs live: "memory" (default) or `{ sqlite: "runs.db" }`. */
  readonly store?: StoreConfig;
  /** Queue name (default: the graph's name). */
  readonly queue?: string;
  readonly concurrency?: number;
  readonly leaseSeconds?: number;
  readonly heartbeatSeconds?: number;
  /** The key sessionStates are signed with (at least 32 characters). */
  readonly sessionKey?: string;
}

const FIX =
  'Use { store?: "memory" | { sqlite: path }, queue?, concurrency?, leaseSeconds?, heartbeatSeconds?, sessionKey? }.';

type Check = (value: unknown) => string | null;
const positive: Check = (v) =>
  typeof v === "number" && Number.isFinite(v) && v > 0 ? null : "must be a positive number";
const CHECKS: Readonly<Record<keyof AgentConfig, Check>> = {
  store: (v) =>
    v === "memory" ||
    (typeof v === "object" &&
      v !== null &&
      Object.keys(v).length === 1 &&
      typeof (v as { sqlite?: unknown }).sqlite === "string" &&
      (v as { sqlite: string }).sqlite.length > 0)
      ? null
      : 'must be "memory" or { sqlite: "<file>" }',
  queue: (v) => (typeof v === "string" ? null : "must be a string"),
  concurrency: (v) => (Number.isInteger(v) && (v as number) >= 1 ? null : "must be an integer ≥ 1"),
  leaseSeconds: positive,
  heartbeatSeconds: positive,
  sessionKey: (v) =>
    typeof v === "string" && v.length >= 32 ? null : "must be a string of at least 32 characters",
};

/**
 * `value` as an AgentConfig; INVALID_OPTIONS naming each bad field (`config.store`) otherwise.
 * Unknown keys are refused too, so a misspelt one is not silently ignored.
 */
export function parseAgentConfig(value: Record<string, unknown>): AgentConfig {
  const issues: { path: string; message: string }[] = [];
  for (const [key, v] of Object.entries(value)) {
    if (v === undefined) continue;
    const check = CHECKS[key as keyof AgentConfig] as Check | undefined;
    const why = check === undefined ? "is not a config key" : check(v);
    if (why !== null) issues.push({ path: `config.${key}`, message: why });
  }
  if (issues.length > 0) {
    const list = issues.map((i) => `${i.path} ${i.message}`).join("; ");
    throw new NervaError(ErrorCode.INVALID_OPTIONS, `Invalid config: ${list}. ${FIX}`, { issues });
  }
  return value as AgentConfig;
}
