import { DEFAULT_JSON_LIMITS, type JsonLimits } from "./json-limits.js";

/** A JSON leaf that reads back equal: a string, a boolean or a finite number. */
function isJsonLeaf(v: unknown): boolean {
  return typeof v === "string" || typeof v === "boolean" || Number.isFinite(v);
}

/**
 * Whether `value` is plain JSON within `limits`: plain objects (prototype `Object.prototype` or
 * `null`), arrays without holes, strings, booleans, null and finite numbers, in one iterative
 * walk that builds no paths. Meant for the common case of a valid value on a hot path; `false`
 * may be conservative (a caller then runs its full check, which says where and why).
 *
 * @example
 * isPlainJson({ a: [1, "x", null] }); // true
 * isPlainJson({ when: new Date() }); // false
 */
export function isPlainJson(value: unknown, limits: JsonLimits = DEFAULT_JSON_LIMITS): boolean {
  if (typeof value !== "object" || value === null) return value === null || isJsonLeaf(value);
  const { maxDepth, maxNodes } = limits;
  const containers: object[] = [value];
  const depths: number[] = [1];
  let nodes = 1;
  while (containers.length > 0) {
    const v = containers.pop() as object;
    const depth = depths.pop() as number;
    if (depth > maxDepth) return false;
    let items: readonly unknown[];
    if (Array.isArray(v)) {
      items = v;
    } else {
      const proto: unknown = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null) return false;
      items = Object.values(v);
    }
    nodes += items.length;
    if (nodes > maxNodes) return false;
    for (let i = 0; i < items.length; i++) {
      const item = items[i];
      if (typeof item === "object" && item !== null) {
        containers.push(item);
        depths.push(depth + 1);
      } else if (item !== null && !isJsonLeaf(item)) {
        return false;
      }
    }
  }
  return true;
}
