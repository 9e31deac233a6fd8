import { afterAll } from "vitest";
import { describeMemoryContract } from "../testing/memory-contract.js";
import { REDIS_URL, dropPrefixes, testPrefix } from "../runs/redis/redis.test-support.js";
import { RedisMemoryStore } from "./redis-memory-store.js";

const prefixes: string[] = [];
afterAll(() => dropPrefixes(prefixes));

describeMemoryContract(
  "RedisMemoryStore",
  async () => {
    const prefix = `${testPrefix("memory")}:`;
    prefixes.push(prefix.slice(0, -1));
    return {
      store: new RedisMemoryStore({ url: REDIS_URL, prefix }),
      reopen: async () => new RedisMemoryStore({ url: REDIS_URL, prefix }),
    };
  },
  { persistent: true },
);
