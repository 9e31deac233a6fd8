// The Redis connection the Redis-backed primitives (memory, registry) share: their common options,
// the client they open or borrow, a bounded wait on every call, and the one mapping of a lost
// connection to NervaError UNAVAILABLE. ioredis is an optional peer dependency, loaded on first use.
import { createHash } from "node:crypto";
import type { Redis, RedisOptions } from "ioredis";
import { z } from "zod";
import { ErrorCode, NervaError, isNervaError } from "../errors.js";
import { requireOptional } from "./optional-dependency.js";

/** What a key prefix may hold: no braces (they would change Redis Cluster's hash slot) nor spaces. */
export const REDIS_PREFIX = /^[A-Za-z0-9_.:-]{1,64}$/;

/** Whether `v` looks like an ioredis client (checked by shape: another copy of ioredis is fine). */
function isRedisClient(v: unknown): boolean {
  if (typeof v !== "object" || v === null) return false;
  const c = v as Record<string, unknown>;
  return (
    typeof c["status"] === "string" &&
    ["call", "callBuffer", "quit", "disconnect", "once", "connect"].every(
      (m) => typeof c[m] === "function",
    )
  );
}

/**
 * The fields every Redis-backed primitive's options share; `defaultPrefix` ends in ":".
 * Refine the object with {@link oneConnection}.
 */
export function redisConnectionFields(defaultPrefix: string) {
  return {
    /** `redis://host:port/db`; default `redis://127.0.0.1:6379`. Not with `client`. */
    url: z.string().min(1).optional(),
    /** An ioredis client to use instead of opening one (one client can serve a whole app). */
    client: z.custom<Redis>(isRedisClient, "must be an ioredis client (new Redis(...))").optional(),
    /** Prefix of every key written. */
    prefix: z
      .string()
      .regex(REDIS_PREFIX, "must be 1-64 letters, digits, '_', '.', ':' or '-'")
      .default(defaultPrefix),
    /** How long one call waits for Redis, connecting included, before it rejects UNAVAILABLE. */
    timeoutSeconds: z.number().positive().max(600).finite().default(5),
  };
}

/** The refinement (check and issue) that refuses `url` and `client` together. */
export const oneConnection: [
  (o: { url?: string | undefined; client?: unknown }) => boolean,
  { path: string[]; message: string },
] = [
  (o) => o.url === undefined || o.client === undefined,
  { path: ["client"], message: "pass either url or client, not both" },
];

/**
 * `err` as NervaError UNAVAILABLE naming `what` (e.g. "run store") when it says Redis could not be
 * reached or did not answer in time; any other error as it is. The one mapping every Redis-backed
 * primitive uses.
 *
 * @example
 * await redis.get(key).catch((err) => { throw redisUnavailable(err, "memory store"); });
 */
export function redisUnavailable(err: unknown, what: string): unknown {
  if (isNervaError(err)) return err;
  const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  if (!UNREACHABLE.test(message)) return err;
  // UNAVAILABLE is a 503, whose message clients read: the client library's own text (which may
  // name the server's address) stays in `cause`, for the server's logs.
  return new NervaError(
    ErrorCode.UNAVAILABLE,
    `The ${what} is unavailable: Redis cannot be reached or did not answer in time. Retry later.`,
    { cause: err, details: { retryAfterSeconds: 1 } },
  );
}

/** A Lua script and its SHA-1, run by {@link RedisConnection.script}. */
export interface RedisScript {
  readonly source: string;
  readonly sha: string;
}

/** Wraps Lua `source` for {@link RedisConnection.script}. */
export function redisScript(source: string): RedisScript {
  return { source, sha: createHash("sha1").update(source).digest("hex") };
}

type IORedisCtor = new (url: string, options: RedisOptions) => Redis;

const UNREACHABLE =
  /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN|Connection is closed|MaxRetriesPerRequest|Stream isn't writeable|Command timed out|\b(LOADING|BUSY|READONLY|MASTERDOWN|CLUSTERDOWN|TRYAGAIN) /;

/**
 * A client with the settings every Redis primitive relies on: nothing queued while Redis is away
 * (so nothing is replayed after an outage), connecting bounded by `timeoutSeconds`, reconnecting
 * forever at most a second apart. `feature` names what needs ioredis (for MISSING_DEPENDENCY).
 */
export function openRedisClient(
  url: string | undefined,
  timeoutSeconds: number,
  feature: string,
): Redis {
  const IORedis = requireOptional<{ default?: IORedisCtor } & IORedisCtor>(
    "ioredis",
    feature,
    "ioredis@^5",
  );
  const Ctor = (IORedis.default ?? IORedis) as IORedisCtor;
  const redis = new Ctor(url ?? "redis://127.0.0.1:6379", {
    // Calls are only sent on a ready connection (see RedisConnection.run), so nothing queues
    // while Redis is away, and nothing sent before an outage is replayed after it.
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: 0,
    connectTimeout: Math.round(timeoutSeconds * 1000),
    // Reconnect forever, at most a second apart: the store recovers by itself.
    retryStrategy: (times: number) => Math.min(times * 100, 1000),
  });
  // Connection errors reach callers as UNAVAILABLE; the event itself has nothing to add.
  redis.on("error", () => undefined);
  return redis;
}

/**
 * One Redis client for one store: its own (closed by {@link close}) or the caller's (never closed
 * here). Every call waits at most `timeoutSeconds` for the connection and the answer together;
 * while Redis cannot be reached calls reject with NervaError UNAVAILABLE, and they work again as
 * soon as the client has reconnected (ioredis keeps retrying in the background).
 */
export class RedisConnection {
  readonly redis: Redis;
  readonly #owned: boolean;
  readonly #timeoutMs: number;
  readonly #what: string;
  #ready: Promise<void> | null = null;

  /**
   * `feature` names what needs ioredis (for MISSING_DEPENDENCY), `what` the store in the
   * UNAVAILABLE message ("memory store").
   */
  constructor(
    options: { url?: string | undefined; client?: Redis | undefined; timeoutSeconds: number },
    feature: string,
    what: string,
  ) {
    this.#timeoutMs = Math.round(options.timeoutSeconds * 1000);
    this.#what = what;
    if (options.client !== undefined) {
      this.redis = options.client;
      this.#owned = false;
      return;
    }
    this.redis = openRedisClient(options.url, options.timeoutSeconds, feature);
    this.#owned = true;
  }

  /**
   * Runs `fn` once the client is ready, within the timeout; connection failures and timeouts
   * become NervaError UNAVAILABLE, other errors pass as they are.
   */
  async run<T>(fn: (redis: Redis) => Promise<T>): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error("Command timed out")), this.#timeoutMs);
    });
    try {
      const r = this.redis;
      if (r.status !== "ready") {
        if (r.status === "end") throw new Error("Connection is closed.");
        if (r.status === "wait") r.connect().catch(() => undefined);
        await Promise.race([this.#whenReady(), expired]);
      }
      return await Promise.race([fn(r), expired]);
    } catch (err) {
      throw this.unavailable(err);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Runs a Lua script by its SHA, sending its source once when Redis does not know it yet. */
  async script(
    redis: Redis,
    script: RedisScript,
    keys: readonly string[],
    args: readonly (string | Buffer | number)[],
    buffers = false,
  ): Promise<unknown> {
    const send = (command: string, head: string) =>
      buffers
        ? redis.callBuffer(command, head, keys.length, ...keys, ...args)
        : redis.call(command, head, keys.length, ...keys, ...args);
    try {
      return await send("EVALSHA", script.sha);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith("NOSCRIPT")) throw err;
      return send("EVAL", script.source);
    }
  }

  /** A connection failure or timeout as NervaError UNAVAILABLE; any other error as it is. */
  unavailable(err: unknown): unknown {
    return redisUnavailable(err, this.#what);
  }

  /** Closes the client if this connection opened it; a borrowed client stays open. */
  async close(): Promise<void> {
    if (!this.#owned) return;
    if (this.redis.status === "ready") {
      await this.redis.quit().catch(() => this.redis.disconnect());
    } else {
      this.redis.disconnect();
    }
  }

  /** One listener for everyone waiting on the connection, however many calls wait. */
  #whenReady(): Promise<void> {
    this.#ready ??= new Promise<void>((resolve) => {
      this.redis.once("ready", () => {
        this.#ready = null;
        resolve();
      });
    });
    return this.#ready;
  }
}
