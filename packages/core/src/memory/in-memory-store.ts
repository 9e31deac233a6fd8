import { ErrorCode, NervaError } from "../errors.js";
import { checkUntrustedJson } from "../internal/json-limits.js";
import { cosine, topK } from "./similarity.js";
import type {
  MemoryItem,
  MemoryRead,
  MemoryReadResult,
  MemoryStore,
  MemoryWrite,
} from "./types.js";

interface ColdEntry {
  readonly item: MemoryItem;
  readonly vector: Float64Array;
  readonly order: number;
}

interface Bucket {
  /** Hot turns per session, oldest first. */
  readonly hot: Map<string, MemoryItem[]>;
  /** Warm items by id, in insertion order (oldest first). */
  readonly warm: Map<string, MemoryItem>;
  /** Id of the current fact for each key. */
  readonly keys: Map<string, string>;
  readonly cold: Map<string, ColdEntry>;
}

/**
 * Memory kept in this process's heap: the default store, lost on restart. Namespaces are
 * separate maps, so one namespace's items can never be returned for another.
 *
 * @example
 * const memory = new TieredMemory({ store: new InMemoryMemoryStore() });
 */
export class InMemoryMemoryStore implements MemoryStore {
  readonly #buckets = new Map<string, Bucket>();
  #order = 0;
  #closed = false;

  #bucket(namespace: string): Bucket {
    let bucket = this.#buckets.get(namespace);
    if (bucket === undefined) {
      bucket = { hot: new Map(), warm: new Map(), keys: new Map(), cold: new Map() };
      this.#buckets.set(namespace, bucket);
    }
    return bucket;
  }

  async write(w: MemoryWrite): Promise<void> {
    this.#checkOpen();
    checkItemMetadata(w.item);
    // Everything that can fail is computed before the first mutation, so a write is all or nothing.
    const vector = w.vector === undefined ? null : Float64Array.from(w.vector);
    const bucket = this.#bucket(w.namespace);
    const order = ++this.#order;
    if (w.hot !== undefined) {
      let turns = bucket.hot.get(w.session);
      if (turns === undefined) bucket.hot.set(w.session, (turns = []));
      turns.push(w.item);
      if (turns.length > w.hot.limit) turns.splice(0, turns.length - w.hot.limit);
    }
    if (w.warm === true) {
      const key = w.item.key;
      if (key !== null) {
        const previous = bucket.keys.get(key);
        if (previous !== undefined) {
          bucket.warm.delete(previous);
          bucket.cold.delete(previous);
        }
        bucket.keys.set(key, w.item.id);
      }
      bucket.warm.set(w.item.id, w.item);
    }
    if (vector !== null) bucket.cold.set(w.item.id, { item: w.item, vector, order });
  }

  async read(r: MemoryRead): Promise<MemoryReadResult> {
    this.#checkOpen();
    const bucket = this.#buckets.get(r.namespace);
    if (bucket === undefined) return { hot: [], warm: [], cold: [] };
    const turns = bucket.hot.get(r.session) ?? [];
    const hot = r.hotLimit > 0 ? turns.slice(Math.max(0, turns.length - r.hotLimit)) : [];
    const warm: MemoryItem[] = [];
    if (r.warmLimit > 0) {
      const all = [...bucket.warm.values()];
      for (let i = all.length - 1; i >= 0 && warm.length < r.warmLimit; i--) {
        warm.push(all[i] as MemoryItem);
      }
    }
    const cold =
      r.cold === undefined || r.cold.limit <= 0
        ? []
        : topK(
            [...bucket.cold.values()].map((e) => ({
              value: e.item,
              score: cosine(e.vector, r.cold!.vector),
              order: e.order,
            })),
            r.cold.limit,
          ).map(({ value, score }) => ({ item: value, score }));
    return { hot, warm, cold };
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#buckets.clear();
  }

  #checkOpen(): void {
    if (this.#closed) throw closedError("InMemoryMemoryStore");
  }
}

/** The error of a call on a closed store. */
export function closedError(name: string): NervaError {
  return new NervaError(
    ErrorCode.INTERNAL,
    `${name} is closed; create a new one to keep using it.`,
  );
}

/**
 * Throws INVALID_INPUT when an item's metadata is nested deeper than 64 levels or holds more
 * than a million values. Every store checks before it serialises or copies metadata (both
 * recurse), so a direct `write` gets the same typed error as `TieredMemory.store`.
 */
export function checkItemMetadata(item: MemoryItem): void {
  // Most items carry no metadata: skip the walk (and its allocations) on the per-request path.
  for (const _ in item.metadata) {
    checkUntrustedJson(item.metadata, "item.metadata", METADATA_FIX);
    return;
  }
}

/** The fix named when metadata is too deep or too large. */
export const METADATA_FIX =
  "Store flatter metadata: at most 64 levels of nesting (the metadata object is the first) and a million values.";
