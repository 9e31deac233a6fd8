// RedisRunStore.list: a queue's runs newest first, from the by-status indexes
// (`<prefix>:st:<queue>:<status>`, scored by createdAt). A page of every status merges the seven
// indexes as it reads them, so no index of all runs is kept (one write fewer per run).
import type { Redis } from "ioredis";
import { decodeCursor, encodeCursor, matchesQuery } from "../list-cursor.js";
import type { RunListQuery } from "../store.js";
import { RUN_STATUSES, type RunPage, type RunRecord } from "../types.js";
import { parseRecord } from "./record-fields.js";
import { toUnavailable } from "./unavailable.js";

const PAGE = 200;

/** One index read newest first (score, then member, descending), a page at a time. */
class IndexReader {
  #buffer: [string, number][] = [];
  #offset = 0;
  #done = false;

  constructor(
    readonly redis: Redis,
    readonly key: string,
    readonly max: string,
  ) {}

  /** The next [id, createdAt] without taking it; `undefined` once the index is read. */
  async peek(): Promise<[string, number] | undefined> {
    if (this.#buffer.length === 0 && !this.#done) {
      const flat = await this.redis
        .zrevrangebyscore(this.key, this.max, "-inf", "WITHSCORES", "LIMIT", this.#offset, PAGE)
        .catch((e: unknown) => {
          throw toUnavailable(e);
        });
      for (let i = 0; i + 1 < flat.length; i += 2) {
        this.#buffer.push([flat[i]!, Number(flat[i + 1])]);
      }
      this.#offset += flat.length / 2;
      if (flat.length < 2 * PAGE) this.#done = true;
    }
    return this.#buffer[0];
  }

  take(): void {
    this.#buffer.shift();
  }
}

/** The newest of the readers' next entries (the order of `newerFirst`), taken; none at the end. */
async function next(readers: IndexReader[]): Promise<string | undefined> {
  let best: IndexReader | undefined;
  let top: [string, number] | undefined;
  for (const r of readers) {
    const head = await r.peek();
    if (head === undefined) continue;
    if (top === undefined || head[1] > top[1] || (head[1] === top[1] && head[0] > top[0])) {
      best = r;
      top = head;
    }
  }
  best?.take();
  return top?.[0];
}

/**
 * A page of `query`'s runs. `key(...parts)` names a key under the store's prefix. Runs are read
 * in batches and filtered on their records (handler, user, the cursor), so a page may take more
 * than one batch.
 */
export async function listRuns(
  redis: Redis,
  key: (...parts: string[]) => string,
  query: RunListQuery,
): Promise<RunPage> {
  const after = decodeCursor(query.cursor ?? null);
  const max = after === null ? "+inf" : String(after.createdAt);
  const statuses = query.status === undefined ? RUN_STATUSES : [query.status];
  const readers = statuses.map((s) => new IndexReader(redis, key("st", query.queue, s), max));
  const runs: RunRecord[] = [];
  // A run that changed status between the reads of two indexes can be in both answers.
  const seen = new Set<string>();
  for (let done = false; !done && runs.length <= query.limit;) {
    const ids: string[] = [];
    while (ids.length < PAGE) {
      const id = await next(readers);
      if (id === undefined) {
        done = true;
        break;
      }
      if (!seen.has(id)) ids.push(id);
      seen.add(id);
    }
    if (ids.length === 0) break;
    const docs = await redis
      .pipeline(ids.map((id) => ["hmget", key("run", id), "fix", "doc", "claim"]))
      .exec()
      .catch((e: unknown) => {
        throw toUnavailable(e);
      });
    for (const [, fields] of docs ?? []) {
      const [fix, doc, claim] = (fields as unknown[] | null) ?? [];
      const run = parseRecord(fix, doc, claim);
      if (run !== null && matchesQuery(run, query, after)) runs.push(run);
    }
  }
  const out = runs.slice(0, query.limit);
  const last = out[out.length - 1];
  return {
    runs: out,
    nextCursor: runs.length > query.limit && last !== undefined ? encodeCursor(last) : null,
  };
}
