import { afterAll } from "vitest";
import { describeRegistryContract } from "../testing/registry-contract.js";
import { REDIS_URL, dropPrefixes, testPrefix } from "../runs/redis/redis.test-support.js";
import { RedisRegistry } from "./redis-registry.js";

const prefixes: string[] = [];
afterAll(() => dropPrefixes(prefixes));

describeRegistryContract(
  "RedisRegistry",
  async (options) => {
    const prefix = `${testPrefix("registry")}:`;
    prefixes.push(prefix.slice(0, -1));
    return {
      registry: new RedisRegistry({ ...options, url: REDIS_URL, prefix }),
      reopen: async () => new RedisRegistry({ ...options, url: REDIS_URL, prefix }),
    };
  },
  { persistent: true },
);
