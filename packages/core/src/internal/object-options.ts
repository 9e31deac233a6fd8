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
