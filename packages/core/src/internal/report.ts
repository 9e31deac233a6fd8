import { messageOf } from "../errors.js";

/**
 * `listener` (a user's `onError`) made safe to call from a timer, event or stream callback: an
 * error it throws is not thrown on into that callback (where it would end the process), but
 * printed once as a process warning naming `label`; later ones are dropped.
 *
 * @example
 * const report = safeListener(options.onError, "GraphHost onError");
 * promise.catch(report);
 */
export function safeListener<A extends unknown[]>(
  listener: ((err: unknown, ...rest: A) => void) | undefined,
  label: string,
): (err: unknown, ...rest: A) => void {
  if (listener === undefined) return () => undefined;
  let warned = false;
  return (err, ...rest) => {
    const warn = (thrown: unknown): void => {
      if (warned) return;
      warned = true;
      process.emitWarning(
        `Nerva: ${label} threw "${messageOf(thrown)}" while told of "${messageOf(err)}". The process went on; later errors it throws are dropped.`,
        { code: "NERVA_ON_ERROR" },
      );
    };
    try {
      const out: unknown = listener(err, ...rest);
      // An async listener's rejection must not become an unhandled rejection either.
      if (typeof (out as PromiseLike<unknown> | null)?.then === "function") {
        (out as PromiseLike<unknown>).then(undefined, warn);
      }
    } catch (thrown) {
      warn(thrown);
    }
  };
}
