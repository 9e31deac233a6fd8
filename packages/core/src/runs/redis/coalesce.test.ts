import { Socket } from "node:net";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it, vi } from "vitest";
import { coalesceWrites } from "./coalesce.js";
import { RedisRunStore } from "./redis-run-store.js";
import { REDIS_URL, dropPrefixes, testPrefix } from "./redis.test-support.js";

const prefixes: string[] = [];
afterAll(() => dropPrefixes(prefixes));

/** Issues `n` SETs then GETs in one turn; how many bytes the socket held back meanwhile. */
async function burst(redis: Redis, prefix: string, n: number): Promise<number> {
  const sets = Array.from({ length: n }, (_, i) => redis.set(`${prefix}:k${i}`, `v${i}`));
  const gets = Array.from({ length: n }, (_, i) => redis.get(`${prefix}:k${i}`));
  const heldBack = redis.stream.writableLength;
  expect(await Promise.all(sets)).toEqual(Array(n).fill("OK"));
  expect(await Promise.all(gets)).toEqual(Array.from({ length: n }, (_, i) => `v${i}`));
  return heldBack;
}

describe("coalesceWrites", () => {
  it("holds a turn's commands in the socket and sends them together when the turn ends", async () => {
    const prefix = testPrefix("coalesce");
    prefixes.push(prefix);
    const plain = new Redis(REDIS_URL);
    const coalesced = new Redis(REDIS_URL);
    coalesceWrites(coalesced);
    try {
      await Promise.all([plain.ping(), coalesced.ping()]);
      // Without it, each command is written as it is issued: nothing waits in the socket.
      expect(await burst(plain, `${prefix}:plain`, 50)).toBe(0);
      // With it, all 100 wait for the end of the turn (one write), and every answer is right.
      expect(await burst(coalesced, `${prefix}:coalesced`, 50)).toBeGreaterThan(100 * 20);
      expect(coalesced.stream.writableCorked).toBe(0);
      // A new socket after a lost connection is corked the same way.
      const id = await coalesced.client("ID");
      await plain.client("KILL", "ID", String(id));
      await coalesced.ping();
      expect(await coalesced.client("ID")).not.toBe(id);
      expect(await burst(coalesced, `${prefix}:again`, 10)).toBeGreaterThan(20 * 20);
    } finally {
      plain.disconnect();
      coalesced.disconnect();
    }
  });

  it("is how RedisRunStore writes: a turn's reads leave through one corked socket", async () => {
    const prefix = testPrefix("coalesce-store");
    prefixes.push(prefix);
    const store = new RedisRunStore({ url: REDIS_URL, prefix });
    // The spy watches the real sockets' cork (it calls through); nothing stands in for them.
    const cork = vi.spyOn(Socket.prototype, "cork");
    try {
      expect(await store.get("run_none")).toBeNull(); // connected, ready
      cork.mockClear();
      const reads = Array.from({ length: 20 }, (_, i) => store.get(`run_none_${i}`));
      expect(cork).toHaveBeenCalledTimes(1);
      expect(await Promise.all(reads)).toEqual(Array(20).fill(null));
    } finally {
      cork.mockRestore();
      await store.close();
    }
  });
});
