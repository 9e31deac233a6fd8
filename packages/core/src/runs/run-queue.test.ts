// RunQueue and Runner at their public boundary: options that are not objects (null from
// JavaScript callers) get a typed error naming them, not a TypeError. Real SQLite store.
import { afterAll, describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { RunQueue } from "./run-queue.js";
import { Runner } from "./runner.js";
import { InMemoryRunStore } from "./memory/in-memory-store.js";
import { RedisRunStore } from "./redis/redis-run-store.js";
import { REDIS_URL, dropPrefixes, testPrefix } from "./redis/redis.test-support.js";
import { SqliteRunStore } from "./sqlite/sqlite-run-store.js";
import { rejection } from "../testing/rejection.js";

describe("RunQueue and Runner options", () => {
  it("refuse options that are not objects with a typed error naming them, and change nothing", async () => {
    const store = new SqliteRunStore({ path: ":memory:" });
    try {
      const queue = new RunQueue({ store, name: "opts" });
      const run = await queue.enqueue({
        handler: "a",
        input: { message: "m" },
        ctx: ExecContext.create(),
      });
      const n = null as never;
      const runner = new Runner({ queue, runtime: new InProcessRuntime() });
      for (const [label, fn] of [
        ["queue.cancel", () => queue.cancel(run.id, n)],
        ["queue.resume", () => queue.resume(run.id, 1, n)],
        ["new Runner", () => new Runner(n)],
        ["runner.stop", () => runner.stop(n)],
      ] as const) {
        const err = await rejection((async () => fn())());
        expect(err.code, label).toMatch(/^INVALID_(INPUT|OPTIONS)$/);
        expect(err.message, label).toMatch(/options/);
      }
      expect((await queue.get(run.id))?.status).toBe("pending");
    } finally {
      await store.close();
    }
  });
});

describe("queue.withName", () => {
  it("is a queue on the same store with the same options under another name", async () => {
    const store = new InMemoryRunStore();
    const queue = new RunQueue({
      store,
      name: "base",
      maxStepBytes: 4096,
      retry: { maxAttempts: 9, initialDelaySeconds: 0.5 },
      maxReclaims: 11,
    });
    const sibling = queue.withName("base.other");
    expect(sibling).toMatchObject({ name: "base.other", store, maxStepBytes: 4096 });
    expect(queue.name).toBe("base");
    const run = await sibling.enqueue({
      handler: "a",
      input: { message: "m" },
      ctx: ExecContext.create(),
    });
    expect(run).toMatchObject({ queue: "base.other", maxReclaims: 11 });
    expect(run.retry).toMatchObject({ maxAttempts: 9, initialDelaySeconds: 0.5 });
    expect(() => queue.withName("no spaces")).toThrow(/options\.name/);
  });
});

describe("queue.events ends with its reader", () => {
  const prefixes: string[] = [];
  afterAll(() => dropPrefixes(prefixes));

  it.each([
    ["InMemoryRunStore", () => new InMemoryRunStore()],
    ["SqliteRunStore", () => new SqliteRunStore({ path: ":memory:" })],
    [
      "RedisRunStore",
      () => {
        const prefix = testPrefix("events-return");
        prefixes.push(prefix);
        return new RedisRunStore({ url: REDIS_URL, prefix });
      },
    ],
  ] as const)(
    "%s: return() while a next() waits for new events settles both, no event needed",
    async (_name, make) => {
      const store = make();
      try {
        const queue = new RunQueue({ store, name: "tail" });
        const run = await queue.enqueue({
          handler: "a",
          input: { message: "m" },
          ctx: ExecContext.create(),
        });
        const events = queue.events(run.id, { afterSeq: 0 });
        expect((await events.next()).value).toMatchObject({ type: "run.enqueued" });
        // Nothing else will be written: this next() waits in the store for a new event.
        const pending = events.next();
        await expect(events.return()).resolves.toEqual({ done: true, value: undefined });
        await expect(pending).resolves.toEqual({ done: true, value: undefined });
        // A later enqueue wakes no one, and the tail is over for good.
        await expect(events.next()).resolves.toEqual({ done: true, value: undefined });
      } finally {
        await store.close();
      }
    },
    10_000,
  );
});
