import { z } from "zod";
import { ErrorCode, parseOrThrow } from "../../errors.js";
import type { JsonValue } from "../../types/agent.js";
import type { SharedStateView } from "../define/types.js";
import {
  InMemorySharedStateStore,
  checkSharedKey,
  copyJson,
  isSharedStateStore,
  sharedValueText,
  type SharedStateStore,
} from "./shared-state-store.js";

/**
 * What concurrent runs of a graph see of the state shared across entry points:
 * - `isolated`: each run has its own buffer, seeded from the initial values; nothing a
 *   run writes is seen by another.
 * - `shared`: one store (in this process, or Redis for every replica); a write is seen at once
 *   by every run; read-modify-write updates may interleave (last writer wins).
 * - `synchronized`: one store, and `update(key, fn)` and `set(key, value)` calls on one key run
 *   one at a time (across every replica on the store), so no write is lost even when `fn` awaits.
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
    /**
     * Where `shared` and `synchronized` state lives: by default in this process; a
     * RedisSharedStateStore shares it with every replica. Not with `isolated`.
     */
    store: z.custom<SharedStateStore>(isSharedStateStore, "must be a SharedStateStore").optional(),
  })
  .strict()
  .refine((o) => o.isolation !== "isolated" || o.store === undefined, {
    path: ["store"],
    message: 'is used only by "shared" and "synchronized" isolation; remove it or change isolation',
  });
/** Options of the shared state of a graph host. */
export type SharedStateOptions = z.input<typeof SharedStateOptionsSchema>;

const checkKey = (key: string): void => checkSharedKey("-", key);

function checked(key: string, value: unknown): JsonValue {
  checkKey(key);
  sharedValueText(key, value);
  return copyJson(value as JsonValue);
}

/** A fresh buffer of its own (what `isolated` gives each run). */
export function isolatedShared(initial: Record<string, unknown> = {}): SharedStateView {
  const values = new Map(Object.entries(copyJson(initial)) as [string, JsonValue][]);
  return {
    get: async <T = JsonValue>(key: string) => copyJson(values.get(key)) as T | undefined,
    set: async (key, value) => void values.set(key, checked(key, value)),
    update: async <T extends JsonValue>(
      key: string,
      fn: (current: T | undefined) => T | Promise<T>,
    ) => {
      const next = checked(key, await fn(copyJson(values.get(key)) as T | undefined));
      values.set(key, next);
      return copyJson(next) as T;
    },
  };
}

/**
 * The shared state of one graph host: hands each run a view according to the isolation level,
 * over the store (seeded with the initial values on first use, without overwriting values
 * another replica already holds) under the graph's name.
 */
export class SharedState {
  readonly isolation: IsolationLevel;
  /** Where `shared` and `synchronized` values live (`isolated`: nowhere, null). */
  readonly store: SharedStateStore | null;
  readonly #namespace: string;
  readonly #initial: Record<string, JsonValue>;
  readonly #view: SharedStateView;
  #seeded: Promise<void> | null = null;

  constructor(options: SharedStateOptions = {}, namespace = "graph") {
    const o = parseOrThrow(
      SharedStateOptionsSchema,
      options,
      ErrorCode.INVALID_OPTIONS,
      "options",
      'Pass { isolation: "isolated" | "shared" | "synchronized", initial: { key: JSON value }, store?: a SharedStateStore (not with "isolated") }.',
    );
    this.isolation = o.isolation;
    for (const [k, v] of Object.entries(o.initial)) checked(k, v);
    this.#initial = copyJson(o.initial) as Record<string, JsonValue>;
    this.#namespace = namespace;
    this.store = o.isolation === "isolated" ? null : (o.store ?? new InMemorySharedStateStore());
    this.#view = this.#storeView();
  }

  /** The view a run gets. */
  forExecution(): SharedStateView {
    return this.isolation === "isolated" ? isolatedShared(this.#initial) : this.#view;
  }

  /** The current shared values (`isolated`: the initial ones). */
  async snapshot(): Promise<Record<string, JsonValue>> {
    if (this.store === null) return copyJson(this.#initial);
    await this.#seed();
    return this.store.snapshot(this.#namespace);
  }

  /** Seeds the store once; tried again on the next call when it failed (Redis away). */
  #seed(): Promise<void> {
    const store = this.store as SharedStateStore;
    this.#seeded ??= store.seed(this.#namespace, this.#initial).catch((err: unknown) => {
      this.#seeded = null;
      throw err;
    });
    return this.#seeded;
  }

  #storeView(): SharedStateView {
    const ns = this.#namespace;
    const store = () => this.store as SharedStateStore;
    const get = async <T>(key: string) => {
      checkKey(key);
      await this.#seed();
      return (await store().get(ns, key)) as T | undefined;
    };
    const set = async (key: string, value: JsonValue) => {
      const v = checked(key, value);
      await this.#seed();
      // Synchronized: through the store's update, so the write takes the key's lock (of any
      // store, the app's own too) and cannot land inside another replica's update and be lost.
      if (this.isolation === "synchronized") await store().update(ns, key, () => v);
      else await store().set(ns, key, v);
    };
    return {
      get,
      set,
      update: async <T extends JsonValue>(
        key: string,
        fn: (current: T | undefined) => T | Promise<T>,
      ) => {
        checkKey(key);
        if (this.isolation === "shared") {
          // No lock: another run may write between this read and this write.
          const next = checked(key, await fn(await get<T>(key)));
          await set(key, next);
          return copyJson(next) as T;
        }
        await this.#seed();
        const next = await store().update(ns, key, async (current) =>
          checked(key, await fn(current as T | undefined)),
        );
        return next as T;
      },
    };
  }
}
