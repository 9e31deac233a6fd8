/** Buffered chunks above which `push` returns a promise (backpressure to the producer). */
const HIGH_WATER = 32;

/**
 * A single-consumer async queue of chunks. Producers `push` as chunks appear; a waiting `next()`
 * is resolved at once (no timers or polling). When the buffer is full, `push` returns a promise
 * that resolves once the consumer has taken chunks, so an awaiting producer slows to its pace.
 * `return()` (a `break` in `for await`) calls `onCancel` and releases every waiting producer.
 */
export class ChunkQueue implements AsyncIterableIterator<string> {
  readonly #buffer: string[] = [];
  readonly #onStart: () => void;
  readonly #onCancel: () => void;
  #reader: {
    resolve: (r: IteratorResult<string>) => void;
    reject: (e: unknown) => void;
  } | null = null;
  #drained: (() => void)[] = [];
  #state: "open" | "done" | "failed" | "cancelled" = "open";
  #error: unknown = undefined;

  constructor(onStart: () => void, onCancel: () => void) {
    this.#onStart = onStart;
    this.#onCancel = onCancel;
  }

  push(chunk: string): void | Promise<void> {
    if (this.#state !== "open") return;
    const reader = this.#reader;
    if (reader !== null) {
      this.#reader = null;
      reader.resolve({ value: chunk, done: false });
      return;
    }
    this.#buffer.push(chunk);
    if (this.#buffer.length >= HIGH_WATER) {
      return new Promise<void>((resolve) => this.#drained.push(resolve));
    }
  }

  /** No more chunks: the consumer sees the buffered ones, then the end. */
  end(): void {
    if (this.#state !== "open") return;
    this.#state = "done";
    this.#release();
    this.#settleReader();
  }

  /** The consumer sees the buffered chunks, then `error`. */
  fail(error: unknown): void {
    if (this.#state !== "open") return;
    this.#state = "failed";
    this.#error = error;
    this.#release();
    this.#settleReader();
  }

  next(): Promise<IteratorResult<string>> {
    this.#onStart();
    const chunk = this.#buffer.shift();
    if (chunk !== undefined) {
      if (this.#buffer.length < HIGH_WATER) this.#release();
      return Promise.resolve({ value: chunk, done: false });
    }
    if (this.#state === "failed") {
      this.#state = "done";
      return Promise.reject(this.#error);
    }
    if (this.#state !== "open") return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      this.#reader = { resolve, reject };
    });
  }

  return(): Promise<IteratorResult<string>> {
    if (this.#state === "open") {
      this.#state = "cancelled";
      this.#buffer.length = 0;
      this.#release();
      this.#onCancel();
    }
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<string> {
    return this;
  }

  #settleReader(): void {
    const reader = this.#reader;
    if (reader === null) return;
    this.#reader = null;
    if (this.#state === "failed") {
      this.#state = "done";
      reader.reject(this.#error);
    } else {
      reader.resolve({ value: undefined, done: true });
    }
  }

  #release(): void {
    const waiting = this.#drained;
    this.#drained = [];
    for (const resolve of waiting) resolve();
  }
}
