// Redis for the RedisRunStore tests: the server at NERVA_REDIS_URL (default 127.0.0.1:6379),
// one key prefix per test, every key of a prefix deleted afterwards.
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";

export const REDIS_URL = process.env.NERVA_REDIS_URL ?? "redis://127.0.0.1:6379";

/** A prefix no other test uses. */
export function testPrefix(label: string): string {
  return `nerva-test:${label}:${randomBytes(4).toString("hex")}`;
}

/** Deletes every key under each of `prefixes`. */
export async function dropPrefixes(prefixes: readonly string[]): Promise<void> {
  if (prefixes.length === 0) return;
  const redis = new Redis(REDIS_URL);
  try {
    for (const prefix of prefixes) {
      let cursor = "0";
      do {
        const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
        cursor = next;
        if (keys.length > 0) await redis.del(...keys);
      } while (cursor !== "0");
    }
  } finally {
    redis.disconnect();
  }
}
