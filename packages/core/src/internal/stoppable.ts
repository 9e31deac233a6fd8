/**
 * Runs the generator `make(stopped)` so that its reader's `return()` (a `break` in `for await`,
 * a client that left an SSE stream) aborts `stopped` at once. An async generator queues
 * `return()` behind a pending `next()`; aborting first ends a wait inside it now, rather than at
 * the next event or timeout.
 */
export function stoppable<T>(
  make: (stopped: AbortSignal) => AsyncGenerator<T, void, undefined>,
): AsyncGenerator<T, void, undefined> {
  const stop = new AbortController();
  const tail = make(stop.signal);
  const wrapped: AsyncGenerator<T, void, undefined> = {
    next: () => tail.next(),
    return: (value?: void | PromiseLike<void>) => {
      stop.abort();
      return tail.return(value as void);
    },
    throw: (err: unknown) => {
      stop.abort();
      return tail.throw(err);
    },
    [Symbol.asyncIterator]: () => wrapped,
  };
  return wrapped;
}
