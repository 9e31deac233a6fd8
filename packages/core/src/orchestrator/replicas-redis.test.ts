// Two replicas of one app behind a load balancer: two orchestrators, each with its own memory
// store and registry, over one Redis. A conversation continues on whichever replica the next
// request reaches, and the registry's figures are the whole app's.
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { RedisMemoryStore } from "../memory/redis-memory-store.js";
import { TieredMemory } from "../memory/tiered-memory.js";
import { RedisRegistry } from "../registry/redis-registry.js";
import { RuleRouter } from "../router/rule-router.js";
import { REDIS_URL, dropPrefixes, testPrefix } from "../runs/redis/redis.test-support.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { Orchestrator } from "./orchestrator.js";

const prefix = testPrefix("replicas");
afterAll(() => dropPrefixes([prefix]));

function replica(client: Redis): Orchestrator {
  const runtime = new InProcessRuntime();
  const orchestrator = new Orchestrator({
    router: new RuleRouter({ rules: [], defaultHandler: "profile_agent" }),
    runtime,
    memory: new TieredMemory({
      store: new RedisMemoryStore({ client, prefix: `${prefix}:memory:` }),
    }),
    registry: new RedisRegistry({ client, prefix: `${prefix}:registry:` }),
  });
  runtime.register(
    "profile_agent",
    orchestrator.handler(async (input, _ctx, kit) => {
      const told = /my name is (\w+)/i.exec(input.message);
      if (told) {
        await kit.memory.store({ kind: "fact", key: "name", content: told[1] as string });
        return `Nice to meet you, ${told[1]}.`;
      }
      const { warm, hot } = await kit.memory.recall({ tiers: ["warm", "hot"] });
      const name = warm.find((f) => f.key === "name")?.content ?? "unknown";
      return `Your name is ${name} (${hot.length} turns remembered).`;
    }),
  );
  return orchestrator;
}

describe("two replicas on one Redis", () => {
  it("continue each other's conversations and count each other's invocations", async () => {
    const client = new Redis(REDIS_URL);
    const [a, b] = [replica(client), replica(client)];
    try {
      const ctx = () => ExecContext.create({ userId: "ada", sessionId: "s1" });
      expect((await a.handle("My name is Ada", ctx())).text).toBe("Nice to meet you, Ada.");
      // The next request reaches the other replica: it knows the fact and the two turns.
      expect((await b.handle("What is my name?", ctx())).text).toBe(
        "Your name is Ada (2 turns remembered).",
      );
      // Another user on the first replica sees none of it.
      const eve = ExecContext.create({ userId: "eve", sessionId: "s1" });
      expect((await a.handle("What is my name?", eve)).text).toBe(
        "Your name is unknown (0 turns remembered).",
      );
      const admin = ExecContext.create();
      const registry = new RedisRegistry({ client, prefix: `${prefix}:registry:` });
      expect((await registry.stats("agent", "profile_agent", admin))?.count).toBe(3);
      await registry.close();
    } finally {
      await a.close();
      await b.close();
      // The stores were given the client: closing the orchestrators leaves it open.
      expect(await client.ping()).toBe("PONG");
      client.disconnect();
    }
  });
});
