import { ErrorCode, NervaError } from "../errors.js";
import { DEFAULT_JSON_LIMITS, jsonLimitViolation } from "../internal/json-limits.js";
import { isPlainJson } from "../internal/plain-json.js";

/** 1 MiB: the default bound of a step value, checkpoint, resume value or run input. */
export const DEFAULT_MAX_STEP_BYTES = 1024 * 1024;

/**
 * Why `value` is not plain JSON that reads back equal (`"a Date at value.when"`), or `null`.
 * Plain objects, arrays, strings, booleans, null and finite numbers only: what is committed must
 * be what a replay returns. Iterative, after the depth bound.
 */
export function notJson(value: unknown, label: string): string | null {
  if (isPlainJson(value)) return null;
  // Only a value that fails the quick check is walked again, to say where and why.
  const violation = jsonLimitViolation(value, DEFAULT_JSON_LIMITS);
  if (violation !== null) return `${label} is ${violation}`;
  const values: unknown[] = [value];
  const paths: string[] = [label];
  while (values.length > 0) {
    const v = values.pop();
    const path = paths.pop() as string;
    switch (typeof v) {
      case "string":
      case "boolean":
        continue;
      case "number":
        if (!Number.isFinite(v)) return `${path} is ${String(v)}, which JSON cannot carry`;
        continue;
      case "object": {
        if (v === null) continue;
        if (Array.isArray(v)) {
          v.forEach((item, i) => {
            values.push(item);
            paths.push(`${path}[${i}]`);
          });
          continue;
        }
        const proto: unknown = Object.getPrototypeOf(v);
        if (proto !== Object.prototype && proto !== null) {
          const name = (v as { constructor?: { name?: string } }).constructor?.name ?? "object";
          return `${path} is a ${name}, not a plain object`;
        }
        for (const [k, item] of Object.entries(v)) {
          values.push(item);
          paths.push(`${path}.${k}`);
        }
        continue;
      }
      default:
        return `${path} is ${v === undefined ? "undefined" : `a ${typeof v}`}, which JSON cannot carry`;
    }
  }
  return null;
}

/**
 * `value` as JSON text, after checking it is plain JSON (see {@link notJson}) of at most
 * `maxBytes` UTF-8 bytes. Throws INVALID_INPUT naming `label`, followed by `fix`.
 *
 * @example
 * const text = toJsonText({ id: 42 }, "step value", DEFAULT_MAX_STEP_BYTES, "Return JSON.");
 */
export function toJsonText(value: unknown, label: string, maxBytes: number, fix: string): string {
  const problem = notJson(value, label);
  if (problem !== null) {
    throw new NervaError(ErrorCode.INVALID_INPUT, `Invalid ${label}: ${problem}. ${fix}`, {
      issues: [{ path: label, message: problem }],
    });
  }
  const text = JSON.stringify(value);
  // A UTF-16 unit is at most 3 bytes of UTF-8: short texts need no count.
  const bytes = text.length * 3 <= maxBytes ? 0 : Buffer.byteLength(text);
  if (bytes > maxBytes) {
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      `Invalid ${label}: ${bytes} bytes of JSON, over maxStepBytes (${maxBytes}). ${fix}`,
      { issues: [{ path: label, message: `must be at most ${maxBytes} bytes as JSON` }] },
    );
  }
  return text;
}
