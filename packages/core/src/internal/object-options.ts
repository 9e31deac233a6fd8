import { ErrorCode, NervaError } from "../errors.js";

/**
 * Throws `code` (naming `options`) unless `options` is an object: JavaScript callers may pass
 * `null` or anything, and reading a field of it must not be their TypeError.
 *
 * @example
 * requireObjectOptions(options, ErrorCode.INVALID_INPUT, "Pass { graceSeconds?: number }.");
 */
export function requireObjectOptions(options: unknown, code: ErrorCode, fix: string): void {
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new NervaError(code, `Invalid options: must be an object. ${fix}`, {
      issues: [{ path: "options", message: "must be an object" }],
    });
  }
}

/**
 * Whether `options` is a plain object with no own keys: a call that passed no options, for
 * which a hot path can skip its schema (whose parse of `{}` gives back an empty object too).
 *
 * @example
 * isEmptyObject({}); // true
 * isEmptyObject({ timeoutSeconds: 1 }); // false
 */
export function isEmptyObject(options: unknown): boolean {
  if (typeof options !== "object" || options === null) return false;
  if (Object.getPrototypeOf(options) !== Object.prototype) return false;
  for (const _ in options) return false;
  return Object.getOwnPropertySymbols(options).length === 0;
}
