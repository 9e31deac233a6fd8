import { expect } from "vitest";
import { NervaError } from "../errors.js";

/**
 * The NervaError `promise` rejects with; fails the test if it resolves or rejects with anything
 * else. For contract suites and tests that then check the error's code and message.
 *
 * @example
 * expect((await rejection(memory.recall("x", anonymousCtx))).code).toBe("UNAUTHENTICATED");
 */
export async function rejection(promise: Promise<unknown>): Promise<NervaError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(NervaError);
    return err as NervaError;
  }
  throw new Error("expected the call to reject");
}

/**
 * The NervaError `fn` throws; fails the test if it returns or throws anything else. The
 * synchronous twin of {@link rejection}, for constructors that refuse their options.
 *
 * @example
 * expect(refusal(() => new SharedState({ isolation: "locked" } as never)).code).toBe("INVALID_OPTIONS");
 */
export function refusal(fn: () => unknown): NervaError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(NervaError);
    return err as NervaError;
  }
  throw new Error("expected a NervaError");
}
