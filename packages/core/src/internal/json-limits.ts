import { ErrorCode, NervaError } from "../errors.js";

/**
 * Bounds for a value that came from outside the process (a worker frame, a wire context, an HTTP
 * body) or from code Nerva does not control (memory metadata, a policy document). Validation and
 * serialisation recurse; a value nested a few thousand levels deep would overflow the stack
 * there. {@link checkJsonLimits} walks the value once, iteratively, before any of that runs.
 */
export interface JsonLimits {
  /** Deepest nesting of arrays and objects; the value itself is depth 1 when it is a container. */
  readonly maxDepth: number;
  /** Most arrays, objects and primitives in total (bounds the work, and catches cycles). */
  readonly maxNodes: number;
}

/** Deep enough for any honest document, far below what overflows the stack. */
export const DEFAULT_JSON_LIMITS: JsonLimits = Object.freeze({ maxDepth: 64, maxNodes: 1_000_000 });

/**
 * Why `value` breaks `limits` (`"nested deeper than 64 levels"`), or `null` when it is within
 * them. Iterative: never recurses, whatever the input. A cyclic value exceeds `maxDepth`.
 *
 * @example
 * jsonLimitViolation(JSON.parse("[[[[1]]]]"), { maxDepth: 3, maxNodes: 100 }); // "nested deeper than 3 levels"
 */
export function jsonLimitViolation(
  value: unknown,
  limits: JsonLimits = DEFAULT_JSON_LIMITS,
): string | null {
  if (typeof value !== "object" || value === null) return null;
  // Parallel stacks of containers still to visit and their depths.
  const values: object[] = [value];
  const depths: number[] = [1];
  let nodes = 1;
  while (values.length > 0) {
    const current = values.pop()!;
    const depth = depths.pop()!;
    if (depth > limits.maxDepth) return `nested deeper than ${limits.maxDepth} levels`;
    const items: unknown[] = Array.isArray(current)
      ? current
      : Object.values(current as Record<string, unknown>);
    nodes += items.length;
    if (nodes > limits.maxNodes) return `more than ${limits.maxNodes} values`;
    for (const item of items) {
      if (typeof item === "object" && item !== null) {
        values.push(item);
        depths.push(depth + 1);
      }
    }
  }
  return null;
}

/**
 * Throws a `NervaError` with `code` naming `label` when `value` breaks `limits`; returns `value`.
 *
 * @example
 * checkJsonLimits(frame, DEFAULT_JSON_LIMITS, ErrorCode.INVALID_INPUT, "frame", "Send flatter JSON.");
 */
export function checkJsonLimits<T>(
  value: T,
  limits: JsonLimits,
  code: ErrorCode,
  label: string,
  fix: string,
): T {
  const violation = jsonLimitViolation(value, limits);
  if (violation !== null) {
    throw new NervaError(code, `Invalid ${label}: ${violation}. ${fix}`, {
      issues: [{ path: label, message: violation }],
    });
  }
  return value;
}

/** {@link checkJsonLimits} with the default limits and `INVALID_INPUT`. */
export function checkUntrustedJson<T>(value: T, label: string, fix: string): T {
  return checkJsonLimits(value, DEFAULT_JSON_LIMITS, ErrorCode.INVALID_INPUT, label, fix);
}
