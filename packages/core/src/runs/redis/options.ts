import type { Redis, RedisOptions } from "ioredis";
import { z } from "zod";
import { requireOptional } from "../../internal/optional-dependency.js";

export const RedisRunStoreOptionsSchema = z
  .object({
    /** `redis://host:port/db`; ignored when `connection` is given. */
    url: z.string().min(1).default("redis://127.0.0.1:6379"),
    /** ioredis options (host, port, password, tls, ...), instead of `url`. */
    connection: z.record(z.string(), z.unknown()).optional(),
    /** Prefix of every key this store writes. */
    prefix: z
      .string()
      .regex(/^[A-Za-z0-9_.:-]{1,64}$/, "must be 1-64 letters, digits, '_', '.', ':' or '-'")
      .default("nerva"),
  })
  .strict();
/** Options of {@link RedisRunStore}. */
export type RedisRunStoreOptions = z.input<typeof RedisRunStoreOptionsSchema>;

type IORedisCtor = new (...args: unknown[]) => Redis;

/**
 * Loads the optional package ioredis (NervaError MISSING_DEPENDENCY when it is missing) and
 * opens the store's command connection from `url` or `connection`.
 */
export function openRedis(options: z.output<typeof RedisRunStoreOptionsSchema>): Redis {
  const IORedis = requireOptional<{ default?: IORedisCtor } & IORedisCtor>(
    "ioredis",
    "RedisRunStore",
    "ioredis@^5",
  );
  const Ctor = (IORedis.default ?? IORedis) as IORedisCtor;
  const base: RedisOptions = { maxRetriesPerRequest: 3, lazyConnect: false };
  const redis =
    options.connection === undefined
      ? new Ctor(options.url, base)
      : new Ctor({ ...base, ...options.connection });
  redis.on("error", () => undefined);
  return redis;
}
