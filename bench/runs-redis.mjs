// The two sides of the Redis durable-runs bench (runs.bench.mjs, runs-redis.profile.mjs): raw
// BullMQ (a Queue and a Worker with a processor) and Nerva (RunQueue + Runner on a RedisRunStore),
// the same trivial job and the same enqueue loop (64 in flight). Each returns jobs/s and the CPU
// each job cost this process and the Redis server (INFO cpu: the server is shared with whatever
// else uses it, so read its figure on a quiet server), and the server's commands per job.
import { randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import { ExecContext, InProcessRuntime, RunQueue, Runner } from "@nerva/core";
import { RedisRunStore } from "@nerva/core/redis";

const requireCore = createRequire(createRequire(import.meta.url).resolve("@nerva/core"));
const { Queue, Worker } = requireCore("bullmq");
const { Redis } = requireCore("ioredis");

export const REDIS_URL = process.env.NERVA_REDIS_URL ?? "redis://127.0.0.1:6379";
const rate = (n, ms) => Math.round((n / ms) * 1000);

export async function dropPrefix(prefix) {
  const redis = new Redis(REDIS_URL);
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
    cursor = next;
    if (keys.length > 0) await redis.del(...keys);
  } while (cursor !== "0");
  redis.disconnect();
}

/** Server CPU (µs) and per-command call counts, from INFO. */
async function serverStats(admin) {
  const info = await admin.info("all");
  const num = (name) => Number(new RegExp(`^${name}:([\\d.]+)`, "m").exec(info)?.[1] ?? 0);
  const calls = {};
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    calls[m[1]] = { calls: Number(m[2]), usec: Number(m[3]) };
  }
  return { cpuUs: (num("used_cpu_sys") + num("used_cpu_user")) * 1e6, calls };
}

/** Times `work` (which runs `n` jobs) with this process's and the server's CPU. */
async function measured(n, work) {
  const admin = new Redis(REDIS_URL);
  const s0 = await serverStats(admin);
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await work();
  const ms = performance.now() - t0;
  const c = process.cpuUsage(c0);
  const s1 = await serverStats(admin);
  admin.disconnect();
  const commands = {};
  for (const [name, v] of Object.entries(s1.calls)) {
    const before = s0.calls[name] ?? { calls: 0, usec: 0 };
    const calls = (v.calls - before.calls) / n;
    if (calls >= 0.05)
      commands[name] = {
        per_job: +calls.toFixed(2),
        us_per_job: +((v.usec - before.usec) / n).toFixed(1),
      };
  }
  return {
    per_s: rate(n, ms),
    node_cpu_us: Math.round((c.user + c.system) / n),
    redis_cpu_us: Math.round((s1.cpuUs - s0.cpuUs) / n),
    commands,
  };
}

/**
 * A BullMQ Queue and Worker over two connections (`prepare` may add commands to each): `process`
 * answers a job on the worker's connection, `add` enqueues job `i` on the queue's, 64 adds in
 * flight. 100 jobs warm up, then `n` are measured.
 */
export async function bullmqQueueAndWorker(concurrency, n, { process, add, prepare = (c) => c }) {
  const prefix = `nerva-bench:${randomBytes(4).toString("hex")}`;
  // BullMQ never closes a connection it was given: these two are closed at the end.
  const connections = [0, 1].map(() =>
    prepare(new Redis(REDIS_URL, { maxRetriesPerRequest: null })),
  );
  const [qc, wc] = connections;
  const keyOf = (id) => `${prefix}:rec:${id}`;
  const queue = new Queue("raw", { connection: qc, prefix });
  let completed = 0;
  let finished;
  let allDone = new Promise((r) => (finished = r));
  let target = 0;
  const worker = new Worker("raw", (job) => process(job, wc, keyOf), {
    connection: wc,
    prefix,
    concurrency,
    removeOnComplete: { count: 0 },
  });
  worker.on("completed", () => {
    if (++completed === target) finished();
  });
  await worker.waitUntilReady();
  const addAll = async (count) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (next < count) await add(queue, next++, qc, keyOf);
      }),
    );
  };
  // Warm-up, as the Nerva side has.
  target = 100;
  await addAll(100);
  await allDone;
  completed = 0;
  target = n;
  allDone = new Promise((r) => (finished = r));
  const m = await measured(n, async () => {
    await addAll(n);
    await allDone;
  });
  await worker.close();
  await queue.close();
  for (const c of connections) c.disconnect();
  await dropPrefix(prefix);
  return m;
}

export const rawBullmq = (concurrency, n) =>
  bullmqQueueAndWorker(concurrency, n, {
    process: async (job) => "ok:" + job.data.input.message,
    add: (queue, i) =>
      queue.add("run", { input: { message: `m${i}` } }, { removeOnComplete: true }),
  });

/** Enqueues `n` runs of `handler`, `concurrency` enqueues in flight; their ids in order. */
export async function enqueueAll(queue, n, handler, concurrency = 64) {
  const ids = new Array(n);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++;
        // One context per enqueue, as one per request in an app: a context records a span for
        // each enqueue, and one shared by every enqueue would hold up to 10,000 of them.
        const ctx = ExecContext.create({ userId: "bench" });
        ids[i] = (await queue.enqueue({ handler, input: { message: `m${i}` }, ctx })).id;
      }
    }),
  );
  return ids;
}

/** Waits for each run to end; throws unless every one succeeded. */
export async function waitAll(queue, ids) {
  for (const id of ids) {
    const run = await queue.wait(id, { timeoutSeconds: 300 });
    if (run.status !== "succeeded") throw new Error(`run ${id} ended ${run.status}`);
  }
}

/**
 * Waits for the last run, then reads every run back, `concurrency` reads in flight (a run not
 * finished yet is waited for); throws unless every one succeeded. Runs of one priority end in
 * about the order they were queued, so most reads find their run finished: the bench pays one
 * read per run, in parallel, where `waitAll` pays one network round trip after another.
 */
export async function collectAll(queue, ids, concurrency = 64) {
  await queue.wait(ids[ids.length - 1], { timeoutSeconds: 300 });
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < ids.length) {
        const id = ids[next++];
        const run = await queue.wait(id, { timeoutSeconds: 300 });
        if (run.status !== "succeeded") throw new Error(`run ${id} ended ${run.status}`);
      }
    }),
  );
}

/**
 * RunQueue + Runner on a RedisRunStore. The runs are read back with `collectAll`, or with
 * `waitAll` (one after another, as before 2026-12-02 afternoon) when WAIT=serial.
 */
export async function nervaRedis(concurrency, n) {
  const collect = process.env.WAIT === "serial" ? waitAll : collectAll;
  const prefix = `nerva-bench:${randomBytes(4).toString("hex")}`;
  const store = new RedisRunStore({ url: REDIS_URL, prefix });
  const queue = new RunQueue({ store, name: "bench" });
  const runtime = new InProcessRuntime({ circuitBreaker: false });
  runtime.register("trivial", async (input) => "ok:" + input.message);
  const runner = new Runner({
    queue,
    runtime,
    concurrency,
    leaseSeconds: 30,
    heartbeatSeconds: 10,
  });
  await runner.start();
  await collect(queue, await enqueueAll(queue, 100, "trivial"));
  const m = await measured(n, async () => collect(queue, await enqueueAll(queue, n, "trivial")));
  await runner.stop({ graceSeconds: 1 });
  await store.close();
  await dropPrefix(prefix);
  return m;
}
