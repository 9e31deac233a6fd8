import { ErrorCode, NervaError, type ExecContext } from "@nerva/core";

const ENDED = new NervaError(
  ErrorCode.CANCELLED,
  "The model call ended before its provider response did; the response was closed.",
);

/**
 * The abort signal of one model call, linked to `ctx.signal` by one listener that `dispose()`
 * removes. The SDK and `fetch` get this signal, not the context's: whatever listeners they leave
 * on it die with the call, and the context keeps none.
 */
export class CallScope {
  readonly #controller = new AbortController();
  readonly #outer: AbortSignal;
  readonly #onAbort = (): void => this.#controller.abort(this.#outer.reason);

  constructor(ctx: ExecContext) {
    this.#outer = ctx.signal;
    if (this.#outer.aborted) this.#controller.abort(this.#outer.reason);
    else this.#outer.addEventListener("abort", this.#onAbort, { once: true });
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /**
   * Ends the call: detaches from the context and aborts whatever of the call is still running.
   * However the call ended (its reader threw, it failed, it finished), a response still open
   * upstream is closed here: nothing else holds it, so no later cancel could reach it.
   */
  dispose(): void {
    this.#outer.removeEventListener("abort", this.#onAbort);
    if (!this.#controller.signal.aborted) this.#controller.abort(ENDED);
  }
}

/**
 * Settles with `p`, or rejects with the signal's reason the moment it aborts: the SDK reports an
 * abort late, or as an `APICallError`, and a stream cancelled mid-body can hang. The listener is
 * removed when `p` settles; a late rejection of `p` is handled.
 */
export function raceSignal<T>(p: PromiseLike<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    Promise.resolve(p).catch(() => undefined);
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    Promise.resolve(p).then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(err);
      },
    );
  });
}
