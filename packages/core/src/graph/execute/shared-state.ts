import { z } from "zod";
import { ErrorCode, NervaError } from "../../errors.js";
import { toJsonText } from "../../runs/json-value.js";
import type { JsonValue } from "../../types/agent.js";
import type { SharedStateView } from "../define/types.js";

/**
 * What concurrent runs of a graph see of the state shared across entry points:
 * - `isolated`: each run has its own buffer, seeded from the initial values; nothing an
 *   run writes is seen by another.
 * - `shared`: one buffer; a write is seen at once by every run; read-modify-write updates
 *   may interleave (last writer wins).
 * - `synchronized`: one buffer, and `update(key, fn)` calls on one key run one at a time, so no
 *   update is lost even when `fn` awaits.
 *
 * @example
 * new GraphHost({ graph, runtime, queue, sharedState: { isolation: IsolationLevel.SYNCHRONIZED, initial: { handled: 0 } } });
 */
export const IsolationLevel = {
  ISOLATED: "isolated",
  SHARED: "shared",
  SYNCHRONIZED: "synchronized",
} as const;
export type IsolationLevel = (typeof IsolationLevel)[keyof typeof IsolationLevel];

export const SharedStateOptionsSchema = z
  .object({
    isolation: z.enum(["isolated", "shared", "synchronized"]).default("isolated"),
    initial: z.record(z.string(), z.unknown()).default({}),
  })
  .strict();
/** Options of the shared state of a graph runtime. */
export type SharedStateOptions = z.input<typeof SharedStateOptionsSchema>;

function copy<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T);
}

function checked(key: string, value: unknown): JsonValue {
  if (typeof key !== "string" || key.length === 0) {
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      "Invalid shared state key: must be a non-empty string.",
      {
        issues: [{ path: "key", message: "must be a non-empty string" }],
      },
    );
  }
  toJsonText(value, `shared state "${key}"`, 1024 * 1024, "Store plain JSON.");
  return copy(value as JsonValue);
}

/** A view over `values` (copies in and out, so callers cannot alias the buffer). */
function view(
  values: Map<string, JsonValue>,
  lock: ((key: string) => Promise<() => void>) | null,
): SharedStateView {
  return {
    get: <T = JsonValue>(key: string) => copy(values.get(key)) as T | undefined,
    set: (key, value) => void values.set(key, checked(key, value)),
    update: async <T extends JsonValue>(
      key: string,
      fn: (current: T | undefined) => T | Promise<T>,
    ) => {
      const release = lock === null ? null : await lock(key);
      try {
        const next = checked(key, await fn(copy(values.get(key)) as T | undefined));
        values.set(key, next);
        return copy(next) as T;
      } finally {
        release?.();
      }
    },
  };
}

/** A fresh buffer of its own (what `isolated` gives each run). */
export function isolatedShared(initial: Record<string, unknown> = {}): SharedStateView {
  return view(new Map(Object.entries(copy(initial)) as [string, JsonValue][]), null);
}

/**
 * The shared state of one graph runtime (this process). Hands each run a view according
 * to the isolation level.
 */
export class SharedState {
  readonly isolation: IsolationLevel;
  readonly #initial: Record<string, unknown>;
  readonly #values: Map<string, JsonValue>;
  readonly #locks = new Map<string, Promise<void>>();
  readonly #view: SharedStateView;

  constructor(options: SharedStateOptions = {}) {
    const o = SharedStateOptionsSchema.parse(options);
    this.isolation = o.isolation;
    for (const [k, v] of Object.entries(o.initial)) checked(k, v);
    this.#initial = copy(o.initial);
    this.#values = new Map(Object.entries(copy(o.initial)) as [string, JsonValue][]);
    this.#view = view(
      this.#values,
      this.isolation === "synchronized" ? (k) => this.#lock(k) : null,
    );
  }

  /** The view a run gets. */
  forExecution(): SharedStateView {
    return this.isolation === "isolated" ? isolatedShared(this.#initial) : this.#view;
  }

  /** The current shared values (`isolated`: the initial ones). */
  snapshot(): Record<string, JsonValue> {
    return Object.fromEntries([...this.#values].map(([k, v]) => [k, copy(v)]));
  }

  async #lock(key: string): Promise<() => void> {
    const before = this.#locks.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    const tail = before.then(() => mine);
    this.#locks.set(key, tail);
    await before;
    return () => {
      release();
      if (this.#locks.get(key) === tail) this.#locks.delete(key);
    };
  }
}
