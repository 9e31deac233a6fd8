import { z } from "zod";
import { ErrorCode, parseOrThrow } from "../errors.js";
import {
  RedisConnection,
  oneConnection,
  redisConnectionFields,
} from "../internal/redis-connection.js";
import type { JsonValue } from "../types/agent.js";
import { checkItemMetadata, closedError } from "./in-memory-store.js";
import { READ, WRITE, namespaceKeys, vectorBytes, vectorOf } from "./redis/layout.js";
import { cosine, topK } from "./similarity.js";
import type {
  MemoryItem,
  MemoryRead,
  MemoryReadResult,
  MemoryStore,
  MemoryWrite,
} from "./types.js";

export const RedisMemoryStoreOptionsSchema = z
  .object({
    ...redisConnectionFields("nerva:memory:"),
    /**
     * How many of a namespace's newest cold items a similarity recall scores (in this process):
     * older ones are not searched.
     */
    coldCandidates: z.number().int().min(1).max(100_000).default(1000),
  })
  .strict()
  .refine(...oneConnection);
/** Options of {@link RedisMemoryStore}. */
export type RedisMemoryStoreOptions = z.input<typeof RedisMemoryStoreOptionsSchema>;

const EMPTY: Buffer = Buffer.alloc(0);

function toItem(json: Buffer): MemoryItem {
  const raw = JSON.parse(json.toString("utf8")) as MemoryItem;
  return Object.freeze({
    id: raw.id,
    kind: raw.kind,
    role: raw.role,
    key: raw.key,
    content: raw.content,
    metadata: Object.freeze(raw.metadata) as Readonly<Record<string, JsonValue>>,
    createdAt: raw.createdAt,
  });
}

/**
 * Memory kept in Redis, so every replica of an app recalls what any of them stored. Each `write`
 * is one Lua script (every tier of the event, or none) and each `read` one script (a consistent
 * snapshot, one round trip). A similarity recall fetches the namespace's newest `coldCandidates`
 * vectors (default 1,000) and scores them in this process, as the SQLite store does; plain Redis
 * has no vector index. Namespaces and sessions are URI-encoded into the keys, so no identity can
 * spell another's keys. Needs the optional package `ioredis`.
 *
 * While Redis cannot be reached every call rejects with NervaError UNAVAILABLE within
 * `timeoutSeconds`; the store works again as soon as Redis is back.
 *
 * @example
 * import { RedisMemoryStore } from "@nerva/core/redis";
 * const memory = new TieredMemory({ store: new RedisMemoryStore({ url: "redis://127.0.0.1:6379" }) });
 */
export class RedisMemoryStore implements MemoryStore {
  /** Prefix of every key this store writes. */
  readonly prefix: string;
  readonly #conn: RedisConnection;
  readonly #coldCandidates: number;
  #closed = false;

  constructor(options: RedisMemoryStoreOptions = {}) {
    const o = parseOrThrow(
      RedisMemoryStoreOptionsSchema,
      options,
      ErrorCode.INVALID_OPTIONS,
      "options",
      'Pass { url: "redis://host:6379" } or { client: an ioredis client }, and optionally prefix, timeoutSeconds and coldCandidates.',
    );
    this.prefix = o.prefix;
    this.#coldCandidates = o.coldCandidates;
    this.#conn = new RedisConnection(o, "RedisMemoryStore", "memory store");
  }

  async write(w: MemoryWrite): Promise<void> {
    this.#checkOpen();
    checkItemMetadata(w.item);
    // Everything that can fail here runs before the script is sent: a write is all or nothing.
    const i = w.item;
    const json = JSON.stringify({
      id: i.id,
      kind: i.kind,
      role: i.role,
      key: i.key,
      content: i.content,
      metadata: i.metadata,
      createdAt: i.createdAt,
    });
    const vector = w.vector === undefined ? null : vectorBytes(w.vector);
    const k = namespaceKeys(this.prefix, w.namespace, w.session);
    const factKey = w.warm === true && i.key !== null;
    const args = [
      w.hot === undefined ? "0" : "1",
      w.hot === undefined ? 0 : w.hot.limit,
      w.warm === true ? "1" : "0",
      factKey ? "1" : "0",
      factKey ? (i.key as string) : "",
      i.id,
      json,
      vector === null ? "0" : "1",
      vector ?? EMPTY,
    ];
    const keys = [k.hot, k.warm, k.items, k.keys, k.cold, k.vectors, k.seq];
    await this.#conn.run((redis) => this.#conn.script(redis, WRITE, keys, args));
  }

  async read(r: MemoryRead): Promise<MemoryReadResult> {
    this.#checkOpen();
    const k = namespaceKeys(this.prefix, r.namespace, r.session);
    const cold = r.cold !== undefined && r.cold.limit > 0 ? r.cold : null;
    const reply = (await this.#conn.run((redis) =>
      this.#conn.script(
        redis,
        READ,
        [k.hot, k.warm, k.items, k.cold, k.vectors],
        [
          Math.max(0, r.hotLimit),
          Math.max(0, r.warmLimit),
          cold === null ? 0 : this.#coldCandidates,
        ],
        true,
      ),
    )) as [Buffer[], (Buffer | null)[], (Buffer | null)[], (Buffer | null)[], Buffer[]];
    const [hotJson, warmJson, coldJson, coldVectors, coldSeqs] = reply;
    const present = (b: Buffer | null): b is Buffer => b !== null;
    const hot = hotJson.map(toItem);
    const warm = warmJson.filter(present).map(toItem);
    if (cold === null) return { hot, warm, cold: [] };
    const candidates: { value: Buffer; score: number | null; order: number }[] = [];
    for (let n = 0; n < coldJson.length; n++) {
      const json = coldJson[n];
      const bytes = coldVectors[n];
      if (json == null || bytes == null) continue;
      candidates.push({
        value: json,
        score: cosine(vectorOf(bytes), cold.vector),
        order: Number(coldSeqs[n]),
      });
    }
    const best = topK(candidates, cold.limit).map(({ value, score }) => ({
      item: toItem(value),
      score,
    }));
    return { hot, warm, cold: best };
  }

  /** Closes the client this store opened; a client passed in `options.client` stays open. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#conn.close();
  }

  #checkOpen(): void {
    if (this.#closed) throw closedError("RedisMemoryStore");
  }
}
