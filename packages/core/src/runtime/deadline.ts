import type { ExecContext } from "../context/exec-context.js";
import type { Span } from "../context/span.js";
import type { NervaError } from "../errors.js";

/** How a deadline-bounded piece of work ended. */
export type DeadlineOutcome<T> =
  | { readonly kind: "done"; readonly value: T }
  | { readonly kind: "failed"; readonly error: unknown }
  /** The timeout, the request's deadline or a cancel came first (`reason.code` says which). */
  | { readonly kind: "ended"; readonly reason: NervaError };

/**
 * Runs `fn` in a fork of `ctx` whose spans nest under `span` (under `ctx`'s current span when
 * `span` is `null`) and whose `signal` aborts at
 * min(`timeoutSeconds`, the request's deadline) or when the request is cancelled. Resolves at
 * that moment even if `fn` ignores the signal, never rejects, and leaves no timer behind (the
 * fork is disposed once `fn` settles or the deadline passes).
 */
export function runWithDeadline<T>(
  ctx: ExecContext,
  span: Span | null,
  timeoutSeconds: number | undefined,
  fn: (scoped: ExecContext) => Promise<T> | T,
): Promise<DeadlineOutcome<T>> {
  return new Promise<DeadlineOutcome<T>>((resolve) => {
    let settled = false;
    const finish = (outcome: DeadlineOutcome<T>): void => {
      if (settled) return;
      settled = true;
      resolve(outcome);
    };
    const scoped = ctx.fork({
      span: span ?? undefined,
      timeoutSeconds,
      onEnd: (reason) => finish({ kind: "ended", reason }),
    });
    // A fork of an already-ended context starts ended and never calls onEnd.
    const ended = scoped.endReason;
    if (ended !== null) finish({ kind: "ended", reason: ended });
    if (settled) {
      scoped.dispose();
      return;
    }
    let running: Promise<T>;
    try {
      running = Promise.resolve(fn(scoped));
    } catch (err) {
      running = Promise.reject(err);
    }
    running.then(
      (value) => {
        finish({ kind: "done", value });
        scoped.dispose();
      },
      (error: unknown) => {
        finish({ kind: "failed", error });
        scoped.dispose();
      },
    );
  });
}
