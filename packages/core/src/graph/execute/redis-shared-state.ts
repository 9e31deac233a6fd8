import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import { z } from "zod";
import { ErrorCode, NervaError, parseOrThrow } from "../../errors.js";
import {
  RedisConnection,
  oneConnection,
  redisConnectionFields,
  redisScript,
} from "../../internal/redis-connection.js";
import type { JsonValue } from "../../types/agent.js";
import { checkSharedKey, sharedValueText, type SharedStateStore } from "./shared-state-store.js";

export const RedisSharedStateStoreOptionsSchema = z
  .object({
    ...redisConnectionFields("nerva:shared:"),
    /**
     * How long a key's lock outlives a holder that stops renewing it (its process died or lost
     * Redis): `update`s of that key wait at most this long for it. Renewed while `fn` runs.
     */
    lockSeconds: z.number().min(0.1).max(3600).finite().default(30),
  })
  .strict()
  .refine(...oneConnection);
/** Options of {@link RedisSharedStateStore}. */
export type RedisSharedStateStoreOptions = z.input<typeof RedisSharedStateStoreOptionsSchema>;

// Every key of a namespace shares one hash tag, so that the commit script (lock and values) is
// atomic on Redis Cluster too. Namespaces and keys are URI-encoded (no braces, no ':'), and the
// values hash ("v") and the locks ("l:<key>") are apart whatever the names.
function keysOf(prefix: string, namespace: string) {
  const base = `${prefix}{${encodeURIComponent(namespace)}}:`;
  return { values: `${base}v`, lock: (key: string) => `${base}l:${encodeURIComponent(key)}` };
}

/** KEYS: lock, values. ARGV: token, lock ms, field. Takes the lock; returns {1, value} or {0}. */
const ACQUIRE = redisScript(`
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {1, redis.call('hget', KEYS[2], ARGV[3])}
end
return {0}
`);

/** KEYS: lock. ARGV: token, lock ms. Extends the lock while it is still the token's. */
const RENEW = redisScript(`
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
return 0
`);

/** KEYS: lock, values. ARGV: token, field, value. Writes and unlocks if the lock is the token's. */
const COMMIT = redisScript(`
if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('hset', KEYS[2], ARGV[2], ARGV[3])
redis.call('del', KEYS[1])
return 1
`);

/** KEYS: lock. ARGV: token. Unlocks if the lock is the token's (compare and delete). */
const RELEASE = redisScript(`
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
`);

/** KEYS: values. ARGV: field, value, field, value, ... Sets the fields that are absent. */
const SEED = redisScript(`
for i = 1, #ARGV, 2 do redis.call('hsetnx', KEYS[1], ARGV[i], ARGV[i + 1]) end
return 0
`);

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * A {@link SharedStateStore} in Redis, so that every replica of an app sees the same shared
 * state: one hash of JSON values per namespace (a graph's name), and for `update` a lock per key
 * (SET NX PX with a random token, renewed while `fn` runs, released by a compare-and-delete
 * script). Waiters retry with a short, growing pause. A holder that dies leaves its lock to
 * expire after `lockSeconds`; a holder that lost its lock (stalled past it) writes nothing and
 * rejects with LEASE_LOST. While Redis cannot be reached, calls reject with UNAVAILABLE within
 * `timeoutSeconds`, and work again once it is back. Needs the optional package `ioredis`.
 *
 * @example
 * import { RedisSharedStateStore } from "@nerva/core/redis";
 * const store = new RedisSharedStateStore({ url: "redis://127.0.0.1:6379" });
 * new GraphHost({ graph, queue, sharedState: { isolation: "synchronized", initial: { n: 0 }, store } });
 */
export class RedisSharedStateStore implements SharedStateStore {
  /** Prefix of every key this store writes. */
  readonly prefix: string;
  readonly #conn: RedisConnection;
  readonly #lockMs: number;
  #closed = false;

  constructor(options: RedisSharedStateStoreOptions = {}) {
    const o = parseOrThrow(
      RedisSharedStateStoreOptionsSchema,
      options,
      ErrorCode.INVALID_OPTIONS,
      "options",
      'Pass { url: "redis://host:6379" } or { client: an ioredis client }, and optionally prefix, timeoutSeconds and lockSeconds.',
    );
    this.prefix = o.prefix;
    this.#lockMs = Math.round(o.lockSeconds * 1000);
    this.#conn = new RedisConnection(o, "RedisSharedStateStore", "shared state store");
  }

  async seed(namespace: string, initial: Readonly<Record<string, JsonValue>>): Promise<void> {
    this.#open();
    checkSharedKey(namespace);
    const args: string[] = [];
    for (const [k, v] of Object.entries(initial)) {
      checkSharedKey(namespace, k);
      args.push(k, sharedValueText(k, v));
    }
    if (args.length === 0) return;
    const { values } = keysOf(this.prefix, namespace);
    await this.#conn.run((r) => this.#conn.script(r, SEED, [values], args));
  }

  async get(namespace: string, key: string): Promise<JsonValue | undefined> {
    this.#open();
    checkSharedKey(namespace, key);
    const { values } = keysOf(this.prefix, namespace);
    return parsed(key, await this.#conn.run((r) => r.hget(values, key)));
  }

  async set(namespace: string, key: string, value: JsonValue): Promise<void> {
    this.#open();
    checkSharedKey(namespace, key);
    const text = sharedValueText(key, value);
    const { values } = keysOf(this.prefix, namespace);
    await this.#conn.run((r) => r.hset(values, key, text));
  }

  async update(
    namespace: string,
    key: string,
    fn: (current: JsonValue | undefined) => JsonValue | Promise<JsonValue>,
  ): Promise<JsonValue> {
    this.#open();
    checkSharedKey(namespace, key);
    const keys = keysOf(this.prefix, namespace);
    const lock = keys.lock(key);
    const token = randomBytes(12).toString("base64url");
    const current = await this.#acquire(lock, keys.values, key, token);
    const renewal = this.#renew(lock, token);
    try {
      const text = sharedValueText(key, await fn(parsed(key, current)));
      const done = await this.#conn.run((r) =>
        this.#conn.script(r, COMMIT, [lock, keys.values], [token, key, text]),
      );
      if (Number(done) !== 1) {
        throw new NervaError(
          ErrorCode.LEASE_LOST,
          `Shared state "${key}" was not updated: its lock expired while the update ran (the process stalled or lost Redis for over lockSeconds). Retry the update.`,
        );
      }
      return JSON.parse(text) as JsonValue;
    } catch (err) {
      await this.#conn
        .run((r) => this.#conn.script(r, RELEASE, [lock], [token]))
        .catch(() => undefined); // unreleased, it expires after lockSeconds
      throw err;
    } finally {
      clearInterval(renewal);
    }
  }

  async snapshot(namespace: string): Promise<Record<string, JsonValue>> {
    this.#open();
    checkSharedKey(namespace);
    const { values } = keysOf(this.prefix, namespace);
    const all = await this.#conn.run((r) => r.hgetall(values));
    return Object.fromEntries(Object.entries(all).map(([k, t]) => [k, parsed(k, t) as JsonValue]));
  }

  /** Closes the client if this store opened it; later calls are refused with INVALID_STATE. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#conn.close();
  }

  /** Takes the lock (waiting behind its holder) and returns the key's stored text. */
  async #acquire(lock: string, values: string, key: string, token: string) {
    for (let pauseMs = 2; ; pauseMs = Math.min(pauseMs * 1.5, 50)) {
      const reply = (await this.#conn.run((r: Redis) =>
        this.#conn.script(r, ACQUIRE, [lock, values], [token, this.#lockMs, key]),
      )) as [number, string | null | undefined];
      if (Number(reply[0]) === 1) return reply[1] ?? null;
      this.#open();
      await sleep(pauseMs * (0.5 + Math.random()));
    }
  }

  /** Extends the lock every third of lockSeconds while `fn` runs. */
  #renew(lock: string, token: string): ReturnType<typeof setInterval> {
    const timer = setInterval(
      () => {
        // A failed renewal is not fatal here: the commit checks the token, and refuses if lost.
        this.#conn
          .run((r) => this.#conn.script(r, RENEW, [lock], [token, this.#lockMs]))
          .catch(() => undefined);
      },
      Math.max(10, Math.floor(this.#lockMs / 3)),
    );
    timer.unref();
    return timer;
  }

  #open(): void {
    if (this.#closed) {
      throw new NervaError(
        ErrorCode.INVALID_STATE,
        "The RedisSharedStateStore is closed; create a new one.",
      );
    }
  }
}

/** A stored text as a value; a text that is not JSON (written by something else) is refused. */
function parsed(key: string, text: string | null | undefined): JsonValue | undefined {
  if (text === null || text === undefined) return undefined;
  try {
    return JSON.parse(text) as JsonValue;
  } catch (cause) {
    throw new NervaError(
      ErrorCode.INVALID_STATE,
      `Shared state "${key}" holds text that is not JSON (written outside Nerva). Set it again with set().`,
      { cause },
    );
  }
}
