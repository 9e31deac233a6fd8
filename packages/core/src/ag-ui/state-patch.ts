// The JSON Patch (RFC 6902) from one state to the next, for AG-UI's STATE_DELTA: objects are
// compared key by key; arrays and other values that differ are replaced whole.

/** One operation of a JSON Patch. */
export type PatchOperation =
  | { readonly op: "add" | "replace"; readonly path: string; readonly value: unknown }
  | { readonly op: "remove"; readonly path: string };

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** A JSON Pointer segment (RFC 6901): `~` as `~0`, `/` as `~1`. */
const segment = (key: string): string => key.replace(/~/g, "~0").replace(/\//g, "~1");

function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  return JSON.stringify(a) === JSON.stringify(b);
}

/** The operations that turn `before` into `after` (both plain JSON objects). */
export function statePatch(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
  path = "",
  out: PatchOperation[] = [],
): PatchOperation[] {
  for (const key of Object.keys(before)) {
    if (!Object.hasOwn(after, key)) out.push({ op: "remove", path: `${path}/${segment(key)}` });
  }
  for (const [key, value] of Object.entries(after)) {
    const at = `${path}/${segment(key)}`;
    if (!Object.hasOwn(before, key)) {
      out.push({ op: "add", path: at, value });
      continue;
    }
    const old = before[key];
    if (isObject(old) && isObject(value)) statePatch(old, value, at, out);
    else if (!same(old, value)) out.push({ op: "replace", path: at, value });
  }
  return out;
}
