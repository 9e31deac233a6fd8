import { execFile } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it, vi } from "vitest";
import { ExecContext } from "../../context/exec-context.js";
import { toHttpError } from "../../http/status.js";
import { newerFirst } from "../list-cursor.js";
import { RunQueue } from "../run-queue.js";
import { describeRunStoreContract } from "../../testing/run-store-contract.js";
import { RedisRunStore } from "./redis-run-store.js";
import { REDIS_URL, dropPrefixes, testPrefix } from "./redis.test-support.js";

const prefixes: string[] = [];
afterAll(() => dropPrefixes(prefixes));

describeRunStoreContract("RedisRunStore", async () => {
  const prefix = testPrefix("contract");
  prefixes.push(prefix);
  return {
    store: new RedisRunStore({ url: REDIS_URL, prefix }),
    reopen: async () => new RedisRunStore({ url: REDIS_URL, prefix }),
  };
});

describe("RedisRunStore claim script", () => {
  it("a run it claimed reads as claimed from every path, and the next write folds the claim in", async () => {
    const prefix = testPrefix("claim");
    prefixes.push(prefix);
    const store = new RedisRunStore({ url: REDIS_URL, prefix });
    const reader = new RedisRunStore({ url: REDIS_URL, prefix });
    const raw = new Redis(REDIS_URL);
    try {
      const queue = new RunQueue({ store, name: "q" });
      const ctx = ExecContext.create({ userId: "u1" });
      const { id } = await queue.enqueue({ handler: "h", input: { message: "m" }, ctx });
      // A worker id JSON must escape, written into the record by Lua.
      const workerId = 'w"1\\/é';
      const claimed = await store.claim({ queue: "q", workerId, leaseSeconds: 30, waitSeconds: 5 });
      expect(claimed?.run).toMatchObject({
        id,
        status: "running",
        fence: 1,
        lastSeq: 2,
        lease: { workerId, fence: 1 },
      });
      // The script took it (the claim sits beside the document until the next write).
      expect(await raw.hget(`${prefix}:run:${id}`, "claim")).not.toBeNull();
      expect(await reader.get(id)).toEqual(claimed?.run);
      const running = await reader.list({ queue: "q", status: "running", limit: 10 });
      expect(running.runs).toEqual([claimed?.run]);
      expect((await reader.list({ queue: "q", status: "pending", limit: 10 })).runs).toEqual([]);
      const events = await reader.readEvents(id, 0, 10);
      expect(events.map((e) => [e.seq, e.type, e.attempt])).toEqual([
        [1, "run.enqueued", 1],
        [2, "run.started", 1],
      ]);
      expect(events[1]?.data).toEqual({ fence: 1, workerId });
      const lease = claimed!.lease;
      await store.heartbeat(lease, 60);
      expect(await raw.hget(`${prefix}:run:${id}`, "claim")).toBe("");
      const beaten = await reader.get(id);
      expect({ ...beaten, lease: null }).toEqual({ ...claimed?.run, lease: null });
      expect(beaten?.lease?.expiresAt).toBeGreaterThan(claimed!.run.lease!.expiresAt);
      // A stale fence is still refused, and the holder's writes keep the seq gap-free.
      await expect(store.append({ ...lease, fence: 0 }, "x.y", {})).rejects.toMatchObject({
        code: "LEASE_LOST",
      });
      await store.append(lease, "x.y", {});
      await store.finish(lease, {
        status: "succeeded",
        result: { status: "success", output: "ok", data: {}, error: null, handler: "h" },
      });
      const all = await reader.readEvents(id, 0, 10);
      expect(all.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
      expect((await reader.get(id))?.status).toBe("succeeded");
    } finally {
      raw.disconnect();
      await reader.close();
      await store.close();
    }
  });
});

describe("RedisRunStore queue", () => {
  const ctx = ExecContext.create({ userId: "u1" });
  const claimOf = (store: RedisRunStore, workerId: string, waitSeconds = 10) =>
    store.claim({ queue: "q", workerId, leaseSeconds: 30, waitSeconds });
  /** A producer and a worker store on a fresh prefix (two connections, as two processes). */
  async function withStores(
    name: string,
    fn: (producer: RedisRunStore, worker: RedisRunStore) => Promise<void>,
  ): Promise<void> {
    const prefix = testPrefix(name);
    prefixes.push(prefix);
    const producer = new RedisRunStore({ url: REDIS_URL, prefix });
    const worker = new RedisRunStore({ url: REDIS_URL, prefix });
    try {
      await fn(producer, worker);
    } finally {
      await Promise.all([producer.close(), worker.close()]);
    }
  }

  it("wakes a claim asleep on another connection as soon as a run is enqueued", async () => {
    await withStores("wake", async (producer, worker) => {
      const waiting = claimOf(worker, "w1");
      await new Promise((r) => setTimeout(r, 300));
      const t0 = performance.now();
      const { id } = await new RunQueue({ store: producer, name: "q" }).enqueue({
        handler: "h",
        input: { message: "m" },
        ctx,
      });
      const claimed = await waiting;
      // A claim that missed the marker would look again only after its 5 s sleep.
      expect(performance.now() - t0).toBeLessThan(1_000);
      expect(claimed?.run.id).toBe(id);
    });
  });

  it("wakes every claim asleep in a process for a burst of runs, one marker after another", async () => {
    await withStores("burst", async (producer, worker) => {
      const claims = Array.from({ length: 16 }, (_, i) => claimOf(worker, `w${i}`));
      await new Promise((r) => setTimeout(r, 300));
      const t0 = performance.now();
      const queue = new RunQueue({ store: producer, name: "q" });
      const ids = await Promise.all(
        Array.from({ length: 16 }, async (_, i) => {
          const run = await queue.enqueue({ handler: "h", input: { message: `m${i}` }, ctx });
          return run.id;
        }),
      );
      const claimed = await Promise.all(claims);
      expect(performance.now() - t0).toBeLessThan(2_000);
      expect(claimed.map((c) => c?.run.id).sort()).toEqual([...ids].sort());
    });
  });

  it("removes queue entries of runs that are gone and claims the next run", async () => {
    const prefix = testPrefix("ghost");
    prefixes.push(prefix);
    const store = new RedisRunStore({ url: REDIS_URL, prefix });
    const raw = new Redis(REDIS_URL);
    try {
      // Entries no record justifies (a run pruned by hand, say): one due, one lapsed lease.
      await raw.zadd(`${prefix}:pend:q`, 1, "ghost-pending");
      await raw.zadd(`${prefix}:act:q`, 1, "ghost-running");
      const { id } = await new RunQueue({ store, name: "q" }).enqueue({
        handler: "h",
        input: { message: "m" },
        ctx,
      });
      const claimed = await claimOf(store, "w1", 1);
      expect(claimed?.run.id).toBe(id);
      expect(await raw.zscore(`${prefix}:pend:q`, "ghost-pending")).toBeNull();
      expect(await raw.zscore(`${prefix}:act:q`, "ghost-running")).toBeNull();
      // What a run leaves in Redis: its own keys, no other queue's.
      const keys = await raw.keys(`${prefix}:*`);
      const kinds = new Set(keys.map((k) => k.slice(prefix.length + 1).split(":")[0]));
      expect([...kinds].sort()).toEqual(["act", "mark", "run", "st"]);
    } finally {
      await store.close();
      raw.disconnect();
    }
  });

  it("orders priorities above 0 after every due run of priority 0, lower first, delays kept", async () => {
    const prefix = testPrefix("prio");
    prefixes.push(prefix);
    const store = new RedisRunStore({ url: REDIS_URL, prefix });
    try {
      const queue = new RunQueue({ store, name: "q" });
      const add = async (message: string, priority: number, delaySeconds = 0) =>
        (await queue.enqueue({ handler: "h", input: { message }, ctx, priority, delaySeconds })).id;
      const p7 = await add("p7", 7);
      const p3late = await add("p3-late", 3, 0.4);
      const p3 = await add("p3", 3);
      const p0 = await add("p0", 0);
      const p0late = await add("p0-late", 0, 0.4);
      const order: string[] = [];
      const next = async () => order.push((await claimOf(store, "w1", 5))!.run.id);
      for (let i = 0; i < 3; i++) await next();
      // Both delayed runs are due now: priority 0 first, though it was enqueued second.
      await new Promise((r) => setTimeout(r, 500));
      await next();
      await next();
      expect(order).toEqual([p0, p3, p7, p0late, p3late]);
    } finally {
      await store.close();
    }
  });
});

describe("RedisRunStore layout", () => {
  it("keeps events in the run hash, still reads runs whose events are in an older stream, and claims a run with steps with its steps", async () => {
    const prefix = testPrefix("layout");
    prefixes.push(prefix);
    const store = new RedisRunStore({ url: REDIS_URL, prefix });
    const raw = new Redis(REDIS_URL);
    try {
      const queue = new RunQueue({ store, name: "q" });
      const ctx = ExecContext.create({ userId: "u1" });
      const { id } = await queue.enqueue({ handler: "h", input: { message: "m" }, ctx });
      const rk = `${prefix}:run:${id}`;
      // No key of its own for the history; nx says there is nothing beside the record to read.
      expect(await raw.exists(`${prefix}:ev:${id}`)).toBe(0);
      // No index of all runs: a list of every status merges the by-status indexes.
      expect(await raw.exists(`${prefix}:list:q`)).toBe(0);
      expect((await store.list({ queue: "q", limit: 10 })).runs.map((r) => r.id)).toEqual([id]);
      expect(await raw.hget(rk, "nx")).toBe("1");
      const first = JSON.parse((await raw.hget(rk, "#1"))!) as { type: string };
      expect(first.type).toBe("run.enqueued");

      const claimed = await store.claim({
        queue: "q",
        workerId: "w1",
        leaseSeconds: 30,
        waitSeconds: 5,
      });
      const lease = claimed!.lease;
      expect(await store.commitStep(lease, "s1", '"v1"')).toBe('"v1"');
      expect(await raw.hget(rk, "nx")).toBe("");
      // A retry makes it claimable again: the claim script must hand the step back.
      await store.retry(lease, 0, { code: "X", message: "again", retriable: true });
      const again = await store.claim({
        queue: "q",
        workerId: "w2",
        leaseSeconds: 30,
        waitSeconds: 5,
      });
      expect(again?.run.fence).toBe(2);
      expect([...(again?.steps ?? new Map())]).toEqual([["s1", '"v1"']]);

      // A run written before events moved into the hash: its history sits in a stream.
      const events = await store.readEvents(id, 0, 100);
      expect(events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
      const [e1, e2] = await raw.hmget(rk, "#1", "#2");
      await raw.hdel(rk, "#1", "#2");
      await raw.xadd(`${prefix}:ev:${id}`, "1-0", "e", e1!);
      await raw.xadd(`${prefix}:ev:${id}`, "2-0", "e", e2!);
      expect(await store.readEvents(id, 0, 100)).toEqual(events);
      expect((await store.readEvents(id, 1, 2)).map((e) => e.seq)).toEqual([2, 3]);
      expect(await store.readEvents(id, events.length, 10)).toEqual([]);
    } finally {
      raw.disconnect();
      await store.close();
    }
  });
});

describe("RedisRunStore record split", () => {
  it("writes the fields that never change once, and still reads, claims and finishes a record written whole", async () => {
    const prefix = testPrefix("split");
    prefixes.push(prefix);
    const store = new RedisRunStore({ url: REDIS_URL, prefix });
    const raw = new Redis(REDIS_URL);
    const claim = (workerId: string) =>
      store.claim({ queue: "q", workerId, leaseSeconds: 30, waitSeconds: 5 });
    const ok = { status: "success", output: "ok", data: {}, error: null, handler: "h" } as const;
    try {
      const queue = new RunQueue({ store, name: "q" });
      const ctx = ExecContext.create({ userId: "u1" });
      const { id } = await queue.enqueue({ handler: "h", input: { message: "m" }, ctx });
      const rk = `${prefix}:run:${id}`;
      const [fix, doc, fx] = await raw.hmget(rk, "fix", "doc", "fx");
      expect(fx).toBe("1");
      expect(Object.keys(JSON.parse(fix!) as object)).toEqual(
        expect.arrayContaining(["input", "context", "retry", "handlers", "createdAt"]),
      );
      expect(Object.keys(JSON.parse(doc!) as object)).not.toContain("input");
      expect(Object.keys(JSON.parse(doc!) as object)).toContain("status");
      const claimed = await claim("w1");
      await store.finish(claimed!.lease, { status: "succeeded", result: ok });
      // Finishing rewrote doc only.
      expect(await raw.hget(rk, "fix")).toBe(fix);
      const done = await store.get(id);
      expect(done).toMatchObject({ id, status: "succeeded", input: { message: "m" }, fence: 1 });
      expect(Object.keys(done!).sort()).toEqual(Object.keys(claimed!.run).sort());

      // A run written before the split: its whole record in doc, no fix, no fx.
      const old = await queue.enqueue({ handler: "h", input: { message: "old" }, ctx });
      const ok2 = `${prefix}:run:${old.id}`;
      await raw.hset(ok2, "doc", JSON.stringify(await store.get(old.id)));
      await raw.hdel(ok2, "fix", "fx");
      expect(await store.get(old.id)).toEqual(old);
      expect((await store.list({ queue: "q", status: "pending", limit: 10 })).runs).toEqual([old]);
      // The claim script leaves it to the read-and-write path, whose write adds fix.
      const again = await claim("w2");
      expect(again?.run).toMatchObject({ id: old.id, status: "running", fence: 1 });
      expect(again?.run.input.message).toBe("old");
      expect(await raw.hget(ok2, "fx")).toBe("1");
      await store.finish(again!.lease, { status: "succeeded", result: ok });
      expect(await store.get(old.id)).toMatchObject({
        id: old.id,
        status: "succeeded",
        context: old.context,
      });
      expect((await store.readEvents(old.id, 0, 10)).map((e) => e.seq)).toEqual([1, 2, 3]);
    } finally {
      raw.disconnect();
      await store.close();
    }
  });
});

describe("RedisRunStore list", () => {
  it("merges the by-status indexes newest first across pages of each index", async () => {
    const prefix = testPrefix("list");
    prefixes.push(prefix);
    const store = new RedisRunStore({ url: REDIS_URL, prefix });
    try {
      const queue = new RunQueue({ store, name: "q" });
      const ctx = ExecContext.create({ userId: "u1" });
      const ids: string[] = [];
      // More than one read (200) of each index, several runs per millisecond (ties on createdAt).
      for (let i = 0; i < 450; i++) {
        ids.push((await queue.enqueue({ handler: "h", input: { message: `m${i}` }, ctx })).id);
      }
      for (let i = 0; i < ids.length; i += 2) await store.cancel(ids[i]!, null);
      const expected = (await Promise.all(ids.map((id) => store.get(id))))
        .map((r) => r!)
        .sort(newerFirst)
        .map((r) => r.id);
      const all = await store.list({ queue: "q", limit: 1000 });
      expect(all.runs.map((r) => r.id)).toEqual(expected);
      expect(all.nextCursor).toBeNull();
      const paged: string[] = [];
      let cursor: string | null = null;
      do {
        const page = await store.list({ queue: "q", limit: 170, cursor });
        paged.push(...page.runs.map((r) => r.id));
        cursor = page.nextCursor;
      } while (cursor !== null);
      expect(paged).toEqual(expected);
      const cancelled = await store.list({ queue: "q", status: "cancelled", limit: 1000 });
      expect(cancelled.runs).toHaveLength(225);
      expect(cancelled.runs.every((r) => r.status === "cancelled")).toBe(true);
    } finally {
      await store.close();
    }
  });
});

describe("RedisRunStore waiters", () => {
  it("wakes queue.wait on a status change only, not on every event of the run", async () => {
    const prefix = testPrefix("waiters");
    prefixes.push(prefix);
    const store = new RedisRunStore({ url: REDIS_URL, prefix });
    const writer = new RedisRunStore({ url: REDIS_URL, prefix });
    try {
      const queue = new RunQueue({ store, name: "q" });
      const ctx = ExecContext.create({ userId: "u1" });
      const { id } = await queue.enqueue({ handler: "h", input: { message: "m" }, ctx });
      const claimed = await writer.claim({
        queue: "q",
        workerId: "w1",
        leaseSeconds: 30,
        waitSeconds: 5,
      });
      const get = vi.spyOn(store, "get");
      const waited = queue.wait(id, { timeoutSeconds: 20 });
      await vi.waitFor(() => expect(get).toHaveBeenCalledTimes(1));
      for (let i = 0; i < 20; i++) await writer.append(claimed!.lease, "x.tick", { i });
      // Give a wake-up on every event time to show as reads.
      await new Promise((r) => setTimeout(r, 300));
      expect(get).toHaveBeenCalledTimes(1);
      await writer.finish(claimed!.lease, {
        status: "succeeded",
        result: { status: "success", output: "ok", data: {}, error: null, handler: "h" },
      });
      expect((await waited).status).toBe("succeeded");
      expect(get).toHaveBeenCalledTimes(2);
      // A run that is gone ends the wait too.
      const pending = await queue.enqueue({ handler: "h", input: { message: "m2" }, ctx });
      const gone = store.waitForStatusChange(pending.id, "pending", { timeoutSeconds: 20 });
      await new Promise((r) => setTimeout(r, 100));
      await writer.cancel(pending.id, null);
      await gone;
      const never = await store.waitForStatusChange("no-such-run", "pending", {
        timeoutSeconds: 20,
      });
      expect(never).toBeUndefined();
    } finally {
      await writer.close();
      await store.close();
    }
  });
});

describe("RedisRunStore when Redis is down", () => {
  /** A store on a port nothing listens on: the client gives up after its retries. */
  async function unreachable(name: string): Promise<{ store: RedisRunStore; port: number }> {
    const closed = createServer().listen(0, "127.0.0.1");
    await once(closed, "listening");
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    return {
      store: new RedisRunStore({ url: `redis://127.0.0.1:${port}`, prefix: testPrefix(name) }),
      port,
    };
  }

  it("answers 503 UNAVAILABLE over HTTP without the Redis client's own message", async () => {
    const { store, port } = await unreachable("down");
    const reported: unknown[] = [];
    const server = createServer((req, res) => {
      store.get("run-1").then(
        (run) => res.end(JSON.stringify(run)),
        (err: unknown) => {
          reported.push(err);
          const { status, headers, body } = toHttpError(err, "req-1");
          res.writeHead(status, { ...headers, "content-type": "application/json" });
          res.end(JSON.stringify(body));
        },
      );
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    try {
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
      const text = await res.text();
      expect(res.status, text).toBe(503);
      expect(res.headers.get("retry-after")).toBe("1");
      expect(JSON.parse(text)).toMatchObject({
        error: { code: "UNAVAILABLE", requestId: "req-1" },
      });
      expect(text).not.toMatch(/MaxRetriesPerRequest|maxRetriesPerRequest|ECONNREFUSED/);
      expect(text).not.toContain(String(port));
      // The server keeps the client library's error, as the cause.
      expect(String((reported[0] as Error).cause)).toMatch(/MaxRetriesPerRequest|ECONNREFUSED/);
    } finally {
      server.close();
      await store.close();
    }
  });

  it("refuses a claim and a wait with UNAVAILABLE", async () => {
    const { store } = await unreachable("down2");
    try {
      await expect(
        store.claim({ queue: "q", workerId: "w", leaseSeconds: 30, waitSeconds: 1 }),
      ).rejects.toMatchObject({ code: "UNAVAILABLE" });
      await expect(store.waitForEvents("run-1", 0, { timeoutSeconds: 1 })).rejects.toMatchObject({
        code: "UNAVAILABLE",
      });
    } finally {
      await store.close();
    }
  });
});

describe("RedisRunStore options", () => {
  it("validates its options", () => {
    expect(() => new RedisRunStore({ prefix: "bad prefix" })).toThrow(/options\.prefix/);
    expect(() => new RedisRunStore({ nope: 1 } as never)).toThrow(/nope/);
  });
});

describe("RedisRunStore without its optional packages", () => {
  it.each(["ioredis"])("throws MISSING_DEPENDENCY naming %s", async (name) => {
    const hook = fileURLToPath(
      new URL("../../../test/fixtures/hide-required-packages.mjs", import.meta.url),
    );
    const entry = fileURLToPath(new URL("../../redis/index.ts", import.meta.url));
    const script = `
      import { RedisRunStore } from ${JSON.stringify(entry)};
      try { new RedisRunStore(); console.log("constructed?!"); }
      catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message, details: e.details })); }`;
    const out = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        ["--import", hook, "--import", "tsx", "--input-type=module", "-e", script],
        { env: { ...process.env, NERVA_HIDE_PACKAGES: name }, timeout: 30_000 },
        (err, stdout, stderr) =>
          err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout),
      ),
    );
    const reported = JSON.parse(out.trim()) as { code: string; message: string; details: unknown };
    expect(reported.code).toBe("MISSING_DEPENDENCY");
    expect(reported.message).toContain(`needs the optional package "${name}"`);
    expect(reported.details).toMatchObject({ package: name });
  });
});
