import { ErrorCode, NervaError } from "../errors.js";
import { ExecContext } from "./exec-context.js";

/** Marks contexts across copies of this package (two installed versions, bundled copies). */
const BRAND = Symbol.for("nerva.exec-context");
Object.defineProperty(ExecContext.prototype, BRAND, { value: true });

/**
 * True when `value` is an ExecContext, made by this copy of `@nerva/core` or by another one
 * installed beside it (an app and a bridge resolving different versions). A context is used only
 * through its own methods, so one from another copy works everywhere a context is expected.
 *
 * @example
 * if (!isExecContext(req.nervaCtx)) throw new Error("nervaMiddleware() is not installed");
 */
export function isExecContext(value: unknown): value is ExecContext {
  return (
    value instanceof ExecContext ||
    (typeof value === "object" &&
      value !== null &&
      (value as { [BRAND]?: unknown })[BRAND] === true)
  );
}

/**
 * Checks the context argument of a public call; throws INVALID_INPUT naming `label` otherwise.
 *
 * @example
 * checkContext(ctx); // at the top of a primitive's method
 */
export function checkContext(ctx: unknown, label = "ctx"): asserts ctx is ExecContext {
  if (!isExecContext(ctx)) {
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      `Invalid ${label}: must be an ExecContext. Create one with ExecContext.create({ ... }).`,
      { issues: [{ path: label, message: "must be an ExecContext" }] },
    );
  }
}
