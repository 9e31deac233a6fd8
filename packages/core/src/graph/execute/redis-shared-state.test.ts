import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorCode, NervaError } from "../../errors.js";
import { RedisServerProcess } from "../../internal/redis-server.test-support.js";
import { REDIS_URL, dropPrefixes, testPrefix } from "../../runs/redis/redis.test-support.js";
import { describeSharedStateStoreContract } from "../../testing/shared-state-store-contract.js";
import { RedisSharedStateStore } from "./redis-shared-state.js";
import { InMemorySharedStateStore, type SharedStateStore } from "./shared-state-store.js";
import { refusal } from "../../testing/rejection.js";

const prefixes: string[] = [];
afterAll(() => dropPrefixes(prefixes));

// Each handle has a client of its own, so that a test can kill one "replica" by its connection.
const clients = new WeakMap<SharedStateStore, Redis>();
describeSharedStateStoreContract(
  "RedisSharedStateStore",
  async () => {
    const prefix = testPrefix("shared");
    prefixes.push(prefix);
    const opened: Redis[] = [];
    const open = () => {
      const client = new Redis(REDIS_URL);
      opened.push(client);
      const store = new RedisSharedStateStore({ client, prefix: `${prefix}:`, lockSeconds: 1 });
      clients.set(store, client);
      return store;
    };
    const cleanup = async () => {
      for (const c of opened) c.disconnect();
      await dropPrefixes([prefix]);
    };
    return { store: open(), another: async () => open(), cleanup };
  },
  { holderDeath: { lockSeconds: 1, die: (store) => clients.get(store)?.disconnect() } },
);

describeSharedStateStoreContract("InMemorySharedStateStore", async () => {
  const store = new InMemorySharedStateStore();
  return { store, another: async () => store };
});

// The app's own implementation (here a plain object over the in-memory store) is held to the
// same contract.
describeSharedStateStoreContract("a custom SharedStateStore", async () => {
  const inner = new InMemorySharedStateStore();
  const store: SharedStateStore = {
    seed: (ns, initial) => inner.seed(ns, initial),
    get: (ns, key) => inner.get(ns, key),
    set: (ns, key, value) => inner.set(ns, key, value),
    update: (ns, key, fn) => inner.update(ns, key, fn),
    snapshot: (ns) => inner.snapshot(ns),
    close: async () => undefined,
  };
  return { store, another: async () => store };
});

describe("RedisSharedStateStore", () => {
  it("refuses bad options with INVALID_OPTIONS naming the field", () => {
    const both = refusal(() => new RedisSharedStateStore({ url: REDIS_URL, client: {} as never }));
    expect(both.code).toBe(ErrorCode.INVALID_OPTIONS);
    expect(both.message).toMatch(/client/);
    expect(refusal(() => new RedisSharedStateStore({ prefix: "a{b}" })).message).toMatch(/prefix/);
    expect(refusal(() => new RedisSharedStateStore({ lockSeconds: 0 })).message).toMatch(
      /lockSeconds/,
    );
    expect(refusal(() => new RedisSharedStateStore({ lock: 1 } as never)).message).toMatch(/lock/);
  });

  it("keeps one hash per namespace under its prefix, and no lock once an update is done", async () => {
    const prefix = testPrefix("shared");
    prefixes.push(prefix);
    const store = new RedisSharedStateStore({ url: REDIS_URL, prefix: `${prefix}:` });
    const admin = new Redis(REDIS_URL);
    try {
      await store.seed("orders{x}", { handled: 0 });
      await store.update("orders{x}", "handled", (n) => (n as number) + 1);
      await store.set("other", "k", { a: 1 });
      expect((await admin.keys(`${prefix}:*`)).sort()).toEqual([
        `${prefix}:{orders%7Bx%7D}:v`,
        `${prefix}:{other}:v`,
      ]);
      expect(await admin.hget(`${prefix}:{other}:v`, "k")).toBe('{"a":1}');
      await admin.hset(`${prefix}:{other}:v`, "broken", "not json");
      const err = await store.get("other", "broken").catch((e: unknown) => e);
      expect((err as NervaError).code).toBe(ErrorCode.INVALID_STATE);
      expect((err as NervaError).message).toContain('"broken"');
    } finally {
      await store.close();
      admin.disconnect();
    }
    await expect(store.get("other", "k")).rejects.toMatchObject({ code: "INVALID_STATE" });
  });

  it("writes nothing for a holder whose lock expired under it (LEASE_LOST)", async () => {
    const prefix = testPrefix("shared");
    prefixes.push(prefix);
    const a = new RedisSharedStateStore({ url: REDIS_URL, prefix: `${prefix}:` });
    const b = new RedisSharedStateStore({ url: REDIS_URL, prefix: `${prefix}:` });
    const admin = new Redis(REDIS_URL);
    try {
      await a.set("g", "n", 1);
      let resume!: () => void;
      const stalled = a.update("g", "n", async (n) => {
        // As if this process stalled past lockSeconds: its lock is gone, b takes the key.
        await admin.del(`${prefix}:{g}:l:n`);
        await new Promise<void>((r) => (resume = r));
        return (n as number) + 100;
      });
      const failed = stalled.catch((e: unknown) => e);
      await new Promise((r) => setTimeout(r, 50));
      expect(await b.update("g", "n", (n) => (n as number) + 1)).toBe(2);
      resume();
      expect(await failed).toMatchObject({ code: ErrorCode.LEASE_LOST });
      expect(await b.get("g", "n")).toBe(2);
    } finally {
      await a.close();
      await b.close();
      admin.disconnect();
    }
  });
});

describe("RedisSharedStateStore with Redis away", () => {
  let server: RedisServerProcess;
  beforeAll(async () => {
    server = await RedisServerProcess.start();
  });
  afterAll(() => server.stop());

  it("rejects with UNAVAILABLE in bounded time, and works again once Redis is back", async () => {
    const store = new RedisSharedStateStore({ url: server.url, timeoutSeconds: 0.5 });
    try {
      await store.seed("g", { n: 0 });
      expect(await store.update("g", "n", (n) => (n as number) + 1)).toBe(1);
      await server.stop();
      for (const call of [
        () => store.get("g", "n"),
        () => store.set("g", "n", 5),
        () => store.update("g", "n", (n) => (n as number) + 1),
        () => store.snapshot("g"),
      ]) {
        const started = Date.now();
        const err = await call().catch((e: unknown) => e);
        expect(err).toBeInstanceOf(NervaError);
        expect((err as NervaError).code).toBe(ErrorCode.UNAVAILABLE);
        expect((err as NervaError).message).toMatch(/shared state store/);
        expect((err as NervaError).message).not.toMatch(/127\.0\.0\.1|ECONNREFUSED/);
        expect(Date.now() - started).toBeLessThan(1500);
      }
      await server.restart();
      const until = Date.now() + 10_000;
      for (;;) {
        const got = await store.set("g", "n", 7).then(
          () => true,
          (e: unknown) => {
            if (Date.now() > until) throw e;
            return false;
          },
        );
        if (got) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(await store.update("g", "n", (n) => (n as number) + 1)).toBe(8);
    } finally {
      await store.close();
      await server.restart().catch(() => undefined);
    }
  });
});
