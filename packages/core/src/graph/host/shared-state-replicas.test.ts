// Two GraphHosts as two replicas of one app: each opens its own RedisRunStore and its own
// RedisSharedStateStore on one Redis (NERVA_REDIS_URL, a key prefix of their own), and runs of one
// queue land on either.
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { ExecContext } from "../../context/exec-context.js";
import { RedisRunStore } from "../../runs/redis/redis-run-store.js";
import { REDIS_URL, dropPrefixes, testPrefix } from "../../runs/redis/redis.test-support.js";
import { RunQueue } from "../../runs/run-queue.js";
import { RedisSharedStateStore } from "../execute/redis-shared-state.js";
import { InMemorySharedStateStore } from "../execute/shared-state-store.js";
import { END, GraphHost, defineGraph, fnNode } from "../index.js";

const prefixes: string[] = [];
afterAll(() => dropPrefixes(prefixes));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const S = z.object({ after: z.number().optional(), replica: z.string().optional() });

/** One replica: the graph (same name on both), its stores and its host. */
function replica(name: string, prefix: string, isolation: "shared" | "synchronized") {
  const graph = defineGraph({
    name: "counter",
    state: S,
    nodes: {
      bump: fnNode(async (_s, ctx) => {
        const after = await ctx.shared.update<number>("count", async (n) => {
          const read = n ?? 0;
          await sleep(5); // a read-modify-write that yields in the middle
          return read + 1;
        });
        await ctx.shared.set("last", name);
        return { after, replica: name };
      }),
    },
    edges: [["bump", END]],
    entry: "bump",
  });
  const runs = new RedisRunStore({ url: REDIS_URL, prefix: `${prefix}:runs` });
  const shared = new RedisSharedStateStore({ url: REDIS_URL, prefix: `${prefix}:shared:` });
  const host = new GraphHost({
    graph,
    queue: new RunQueue({ store: runs, name: "counter" }),
    runner: { concurrency: 3, leaseSeconds: 5, heartbeatSeconds: 1 },
    sharedState: { isolation, initial: { count: 0 }, store: shared },
  });
  const close = async () => {
    await host.stop({ graceSeconds: 0 });
    await runs.close();
    await shared.close();
  };
  return { host, close };
}

describe("shared state across two replicas on Redis", () => {
  it("synchronized: a counter bumped by concurrent runs on both hosts ends exact", async () => {
    const prefix = testPrefix("shared-replicas");
    prefixes.push(prefix);
    const a = replica("a", prefix, "synchronized");
    const b = replica("b", prefix, "synchronized");
    try {
      await a.host.start();
      const first = await a.host.triggerAndWait("default", {}, ExecContext.create(), {
        timeoutSeconds: 20,
      });
      expect(first.state.after).toBe(1);
      // b starts later with the same initial values: they do not reset what a counted.
      await b.host.start();
      const ids = await Promise.all(
        Array.from({ length: 24 }, (_, i) => (i % 2 === 0 ? a : b).host.trigger("default", {})),
      );
      const results = await Promise.all(ids.map((id) => a.host.wait(id, { timeoutSeconds: 30 })));
      expect(results.every((r) => r.status === "succeeded")).toBe(true);
      expect((await b.host.sharedState.snapshot()).count).toBe(25);
      expect((await a.host.sharedState.snapshot()).count).toBe(25);
      expect(results.map((r) => Number(r.state.after)).sort((x, y) => x - y)).toEqual(
        Array.from({ length: 24 }, (_, i) => i + 2),
      );
      // Both replicas ran some of them (each runs at most 3 at a time).
      expect(new Set(results.map((r) => r.state.replica))).toEqual(new Set(["a", "b"]));
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("shared: a write on one replica is read at once on the other", async () => {
    const prefix = testPrefix("shared-replicas");
    prefixes.push(prefix);
    const a = replica("a", prefix, "shared");
    const b = replica("b", prefix, "shared");
    try {
      await a.host.start();
      await a.host.triggerAndWait("default", {}, ExecContext.create(), { timeoutSeconds: 20 });
      expect(await b.host.sharedState.snapshot()).toEqual({ count: 1, last: "a" });
    } finally {
      await a.close();
      await b.close();
    }
  });
});

describe("sharedState options", () => {
  const graph = defineGraph({
    name: "opts",
    state: S,
    nodes: { n: fnNode(async () => ({})) },
    edges: [["n", END]],
    entry: "n",
  });

  it("refuses a store with isolated state, and what is not a store, naming the field", () => {
    const store = new InMemorySharedStateStore();
    expect(() => new GraphHost({ graph, sharedState: { isolation: "isolated", store } })).toThrow(
      /sharedState\.store.*"shared" and "synchronized"/,
    );
    expect(() => new GraphHost({ graph, sharedState: { store } })).toThrow(/sharedState\.store/);
    expect(
      () =>
        new GraphHost({
          graph,
          sharedState: { isolation: "shared", store: { get() {} } as never },
        }),
    ).toThrow(/sharedState\.store.*must be a SharedStateStore/);
    expect(() => new GraphHost({ graph, sharedState: { initial: { bad: () => 1 } } })).toThrow(
      /shared state "bad"/,
    );
  });

  it("uses an in-memory store by default, and the one given otherwise", async () => {
    const store = new InMemorySharedStateStore();
    await store.set("opts", "kept", 7);
    const host = new GraphHost({
      graph,
      sharedState: { isolation: "synchronized", initial: { kept: 0, fresh: 1 }, store },
    });
    expect(host.sharedState.store).toBe(store);
    expect(await host.sharedState.snapshot()).toEqual({ kept: 7, fresh: 1 });
    const isolated = new GraphHost({ graph, sharedState: { initial: { n: 1 } } });
    expect(isolated.sharedState.store).toBeNull();
    expect(await isolated.sharedState.snapshot()).toEqual({ n: 1 });
    const own = new GraphHost({ graph, sharedState: { isolation: "shared" } });
    expect(own.sharedState.store).toBeInstanceOf(InMemorySharedStateStore);
  });
});
