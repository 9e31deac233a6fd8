import { ErrorCode, NervaError } from "@nerva/core";

/** The parsed flags of a command line. */
export type Values = Record<string, string | boolean | undefined>;

/** The flags each command takes; any other is refused by {@link checkFlags}. */
const TAKES: Readonly<Record<string, readonly string[]>> = {
  run: ["input", "entry", "store"],
  dashboard: ["store", "port", "workers"],
  "runs list": ["store", "prefix", "queue", "status", "limit"],
  "runs show": ["store", "prefix"],
  "runs events": ["store", "prefix", "after", "follow"],
  "runs resume": ["store", "prefix", "value", "key", "module"],
  "runs cancel": ["store", "prefix", "reason"],
};

function bad(message: string): NervaError {
  return new NervaError(ErrorCode.INVALID_INPUT, message);
}

/**
 * Refuses a flag `command` does not take and positional arguments past `positionals` (their
 * names, for the message), so a mistyped command line fails instead of being half ignored.
 */
export function checkFlags(
  command: string,
  values: Values,
  args: readonly string[],
  positionals: readonly string[],
): void {
  const takes = TAKES[command] ?? [];
  for (const [flag, value] of Object.entries(values)) {
    if (value === undefined || flag === "help" || takes.includes(flag)) continue;
    throw bad(
      `nerva ${command} does not take --${flag} (it takes ${takes.map((f) => `--${f}`).join(", ")}).`,
    );
  }
  for (const [i, name] of positionals.entries()) {
    if (args[i] === undefined) throw bad(`nerva ${command} needs ${name}.`);
  }
  const extra = args[positionals.length];
  if (extra !== undefined) throw bad(`nerva ${command}: unexpected argument "${extra}".`);
}

/** A whole-number flag in `[min, max]`, or `fallback` when it is not given. */
export function intFlag(
  values: Values,
  name: string,
  min: number,
  max: number,
  fallback: number,
): number {
  const raw = values[name];
  if (typeof raw !== "string") return fallback;
  const n = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(n >= min && n <= max)) {
    throw bad(`--${name} must be a whole number from ${min} to ${max} (got "${raw}").`);
  }
  return n;
}

/** A flag that must be one of `allowed`, or `undefined` when it is not given. */
export function oneOfFlag<T extends string>(
  values: Values,
  name: string,
  allowed: readonly T[],
): T | undefined {
  const raw = values[name];
  if (typeof raw !== "string") return undefined;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw bad(`--${name} must be one of ${allowed.join(", ")} (got "${raw}").`);
  }
  return raw as T;
}

/** A flag holding a JSON object (`--input`). */
export function jsonObjectFlag(values: Values, name: string): Record<string, unknown> {
  const raw = values[name];
  if (typeof raw !== "string") return {};
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw bad(`--${name} must be JSON (got ${raw}).`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw bad(`--${name} must be a JSON object, e.g. '{"orderId":"42"}' (got ${raw}).`);
  }
  return value as Record<string, unknown>;
}

/** A flag holding an answer: JSON, or the text as a string when it is not JSON. */
export function answerFlag(raw: string): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return raw;
  }
}

/** A path for a command line a person copies: quoted when the shell would split it. */
export function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}

/** A text flag that must match `pattern` (said as `what`), or `undefined` when it is not given. */
export function textFlag(
  values: Values,
  name: string,
  pattern: RegExp,
  what: string,
): string | undefined {
  const raw = values[name];
  if (typeof raw !== "string") return undefined;
  if (!pattern.test(raw)) throw bad(`--${name} must be ${what} (got "${raw.slice(0, 80)}").`);
  return raw;
}
