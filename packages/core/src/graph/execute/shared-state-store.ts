import { ErrorCode, NervaError } from "../../errors.js";
import { toJsonText } from "../../runs/json-value.js";
import type { JsonValue } from "../../types/agent.js";

/** Largest value one shared state key holds, as JSON. */
export const MAX_SHARED_VALUE_BYTES = 1024 * 1024;

/**
 * Where the shared state of graphs lives (`shared` and `synchronized` isolation). Values are
 * JSON, kept per `namespace` (a GraphHost uses its graph's name), and handed in and out as
 * copies. Every handle on one store (one per replica, for a store outside the process) sees the
 * same values: a `set` is seen at once by every handle, and `update`s of one key run one at a
 * time across all of them. Bad keys and values are refused with NervaError INVALID_INPUT naming
 * the key; a backend that cannot be reached rejects with UNAVAILABLE.
 *
 * @example
 * const store: SharedStateStore = new InMemorySharedStateStore();
 * await store.seed("orders", { handled: 0 });
 * await store.update("orders", "handled", (n) => ((n as number) ?? 0) + 1); // 1
 */
export interface SharedStateStore {
  /** Sets the keys of `initial` that have no value yet (a second replica overwrites nothing). */
  seed(namespace: string, initial: Readonly<Record<string, JsonValue>>): Promise<void>;
  /** The value of `key`, or `undefined`. */
  get(namespace: string, key: string): Promise<JsonValue | undefined>;
  /**
   * Replaces the value of `key`, at once and for every handle, without waiting for the key's
   * lock (a `synchronized` SharedState writes through `update` instead, to be ordered with them).
   */
  set(namespace: string, key: string, value: JsonValue): Promise<void>;
  /**
   * Replaces `key` by `fn(current)` holding the key's lock: updates of one key run one at a
   * time across every handle on the store, even when `fn` awaits; none is lost. When `fn`
   * throws, nothing is written and the lock is released. Returns the value written.
   */
  update(
    namespace: string,
    key: string,
    fn: (current: JsonValue | undefined) => JsonValue | Promise<JsonValue>,
  ): Promise<JsonValue>;
  /** Every key of `namespace` and its value. */
  snapshot(namespace: string): Promise<Record<string, JsonValue>>;
  /** Releases what the store holds (a connection it opened). */
  close(): Promise<void>;
}

/** Whether `v` has the methods of a {@link SharedStateStore}. */
export function isSharedStateStore(v: unknown): v is SharedStateStore {
  if (typeof v !== "object" || v === null) return false;
  const s = v as Record<string, unknown>;
  return ["seed", "get", "set", "update", "snapshot", "close"].every(
    (m) => typeof s[m] === "function",
  );
}

function refuse(path: string, what: string, message: string): never {
  throw new NervaError(ErrorCode.INVALID_INPUT, `Invalid ${what}: ${message}.`, {
    issues: [{ path, message }],
  });
}

/** Refuses a namespace, and a key when one is given, that is not a non-empty string (INVALID_INPUT). */
export function checkSharedKey(namespace: unknown, ...key: unknown[]): void {
  if (typeof namespace !== "string" || namespace.length === 0) {
    refuse("namespace", "shared state namespace", "must be a non-empty string");
  }
  if (key.length > 0 && (typeof key[0] !== "string" || key[0].length === 0)) {
    refuse("key", "shared state key", "must be a non-empty string");
  }
}

/** `value` as JSON text; INVALID_INPUT naming `key` when it is not plain JSON or is too large. */
export function sharedValueText(key: string, value: unknown): string {
  return toJsonText(value, `shared state "${key}"`, MAX_SHARED_VALUE_BYTES, "Store plain JSON.");
}

/** A copy of a JSON value (`undefined` stays `undefined`). */
export function copyJson<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T);
}

/**
 * The {@link SharedStateStore} of one process (the GraphHost's default): values in memory, and
 * `update`s of one key queued behind each other on a promise per key.
 *
 * @example
 * const store = new InMemorySharedStateStore();
 * new GraphHost({ graph, sharedState: { isolation: "synchronized", initial: { n: 0 }, store } });
 */
export class InMemorySharedStateStore implements SharedStateStore {
  readonly #spaces = new Map<string, Map<string, string>>();
  readonly #locks = new Map<string, Promise<void>>();

  async seed(namespace: string, initial: Readonly<Record<string, JsonValue>>): Promise<void> {
    checkSharedKey(namespace);
    const texts = Object.entries(initial).map(([k, v]) => {
      checkSharedKey(namespace, k);
      return [k, sharedValueText(k, v)] as const;
    });
    const values = this.#space(namespace);
    for (const [k, text] of texts) if (!values.has(k)) values.set(k, text);
  }

  async get(namespace: string, key: string): Promise<JsonValue | undefined> {
    checkSharedKey(namespace, key);
    const text = this.#spaces.get(namespace)?.get(key);
    return text === undefined ? undefined : (JSON.parse(text) as JsonValue);
  }

  async set(namespace: string, key: string, value: JsonValue): Promise<void> {
    checkSharedKey(namespace, key);
    this.#space(namespace).set(key, sharedValueText(key, value));
  }

  async update(
    namespace: string,
    key: string,
    fn: (current: JsonValue | undefined) => JsonValue | Promise<JsonValue>,
  ): Promise<JsonValue> {
    checkSharedKey(namespace, key);
    const release = await this.#lock(`${namespace.length}:${namespace}:${key}`);
    try {
      const next = await fn(await this.get(namespace, key));
      const text = sharedValueText(key, next);
      this.#space(namespace).set(key, text);
      return JSON.parse(text) as JsonValue;
    } finally {
      release();
    }
  }

  async snapshot(namespace: string): Promise<Record<string, JsonValue>> {
    checkSharedKey(namespace);
    const values = this.#spaces.get(namespace) ?? new Map<string, string>();
    return Object.fromEntries([...values].map(([k, t]) => [k, JSON.parse(t) as JsonValue]));
  }

  async close(): Promise<void> {}

  #space(namespace: string): Map<string, string> {
    let values = this.#spaces.get(namespace);
    if (values === undefined) this.#spaces.set(namespace, (values = new Map()));
    return values;
  }

  async #lock(id: string): Promise<() => void> {
    const before = this.#locks.get(id) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    const tail = before.then(() => mine);
    this.#locks.set(id, tail);
    await before;
    return () => {
      release();
      if (this.#locks.get(id) === tail) this.#locks.delete(id);
    };
  }
}
