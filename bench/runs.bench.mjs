// Durable runs (DESIGN §5), against the built package:
// 1. SQLite, trivial handler, enqueue → succeeded end to end, with 1 and 2 worker processes
//    (target: ≥ 1,000 runs/s on 2 cores); a 3-step run reported too.
// 2. Redis: RunQueue + Runner against raw BullMQ (Queue + Worker, same payload, same enqueue
//    loop) at concurrency 16 (target: ≥ 80% of its jobs/s) and at concurrency 1.
// 3. Live events() latency (a worker emits, a tail receives): SQLite across processes, Redis.
// 4. Heap of a worker process after 10k / HEAP_RUNS runs (SQLite), after GC: flat.
// Run: pnpm --filter @nerva/core build && node --expose-gc bench/runs.bench.mjs
//      (or: pnpm bench runs). Needs Redis at NERVA_REDIS_URL (default redis://127.0.0.1:6379).
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { ExecContext, InProcessRuntime, RunQueue, Runner } from "@nerva/core";
import { RedisRunStore } from "@nerva/core/redis";
import { SqliteRunStore } from "@nerva/core/sqlite";
import {
  REDIS_URL,
  dropPrefix,
  enqueueAll,
  nervaRedis,
  rawBullmq,
  waitAll,
} from "./runs-redis.mjs";

const SQLITE_RUNS = Number(process.env.SQLITE_RUNS ?? 5000);
const REDIS_RUNS = Number(process.env.REDIS_RUNS ?? 3000);
const HEAP_RUNS = Number(process.env.HEAP_RUNS ?? 100_000);

const dir = mkdtempSync(join(tmpdir(), "nerva-bench-runs-"));
const ctx = ExecContext.create({ userId: "bench" });
const sorted = (xs) => [...xs].sort((a, b) => a - b);
const pct = (xs, p) => sorted(xs)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];
const rate = (n, ms) => Math.round((n / ms) * 1000);
const log = (...a) => console.error(...a);

// A worker process: a Runner over the SQLite file, trivial and 3-step handlers, and a ticker.
const workerSource = (path, concurrency) => `
  import { InProcessRuntime, RunQueue, Runner } from "@nerva/core";
  import { SqliteRunStore } from "@nerva/core/sqlite";
  const store = new SqliteRunStore({ path: ${JSON.stringify(path)} });
  const queue = new RunQueue({ store, name: "bench" });
  const runtime = new InProcessRuntime({ circuitBreaker: false });
  runtime.register("trivial", async (input) => "ok:" + input.message);
  runtime.register("three_steps", async (input, ctx) => {
    let n = 0;
    for (const key of ["a", "b", "c"]) n += await ctx.run.step(key, () => 1);
    return "steps:" + n;
  });
  runtime.register("ticker", async (input, ctx) => {
    for (let i = 0; i < 200; i++) {
      await new Promise((r) => setTimeout(r, 5));
      await ctx.run.emit("bench.tick", { t: Date.now() });
    }
    return "ticked";
  });
  const runner = new Runner({ queue, runtime, concurrency: ${concurrency}, leaseSeconds: 30, heartbeatSeconds: 10 });
  await runner.start();
  process.stdout.write("ready\\n");
  if (process.env.HEAP_REPORT === "1") {
    setInterval(() => { globalThis.gc?.(); process.stdout.write("heap " + process.memoryUsage().heapUsed + "\\n"); }, 1000).unref();
  }
  process.on("SIGTERM", () => runner.stop({ graceSeconds: 1 }).then(() => store.close()).then(() => process.exit(0)));
`;

function startWorker(path, concurrency, env = {}) {
  const child = spawn(
    process.execPath,
    ["--expose-gc", "--input-type=module", "-e", workerSource(path, concurrency)],
    {
      cwd: process.cwd(),
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  const lines = [];
  let buffer = "";
  const ready = new Promise((resolve, reject) => {
    child.stdout.on("data", (d) => {
      buffer += d.toString();
      const parts = buffer.split("\n");
      buffer = parts.pop();
      for (const line of parts) {
        if (line === "ready") resolve();
        else lines.push(line);
      }
    });
    child.on("exit", (code) => reject(new Error(`worker exited ${code}`)));
  });
  ready.catch(() => undefined);
  return {
    child,
    ready,
    lines,
    stop: () => new Promise((r) => (child.once("exit", r), child.kill("SIGTERM"))),
  };
}

async function sqliteThroughput(workers, handler, n) {
  const path = join(dir, `tp-${workers}-${handler}-${randomBytes(3).toString("hex")}.db`);
  const store = new SqliteRunStore({ path });
  const queue = new RunQueue({ store, name: "bench" });
  const procs = Array.from({ length: workers }, () => startWorker(path, 16));
  await Promise.all(procs.map((p) => p.ready));
  // Warm-up: the first runs pay for JIT and page-cache misses.
  await waitAll(queue, await enqueueAll(queue, 200, handler));
  const t0 = performance.now();
  const ids = await enqueueAll(queue, n, handler);
  await waitAll(queue, ids);
  const ms = performance.now() - t0;
  await Promise.all(procs.map((p) => p.stop()));
  await store.close();
  return { workers, handler, runs: n, runs_per_s: rate(n, ms) };
}

async function sqliteTail() {
  const path = join(dir, `tail-${randomBytes(3).toString("hex")}.db`);
  const store = new SqliteRunStore({ path });
  const queue = new RunQueue({ store, name: "bench" });
  const worker = startWorker(path, 1);
  await worker.ready;
  const run = await queue.enqueue({ handler: "ticker", input: { message: "x" }, ctx });
  const latencies = [];
  for await (const e of queue.events(run.id))
    if (e.type === "bench.tick") latencies.push(Date.now() - e.data.t);
  await worker.stop();
  await store.close();
  return { p50_ms: pct(latencies, 50), p99_ms: pct(latencies, 99), events: latencies.length };
}

async function sqliteHeap() {
  const path = join(dir, `heap-${randomBytes(3).toString("hex")}.db`);
  const store = new SqliteRunStore({ path });
  const queue = new RunQueue({ store, name: "bench" });
  const worker = startWorker(path, 16, { HEAP_REPORT: "1" });
  await worker.ready;
  const heapAt = {};
  let done = 0;
  for (const mark of [10_000, HEAP_RUNS]) {
    while (done < mark) {
      const batch = Math.min(5_000, mark - done);
      await waitAll(queue, await enqueueAll(queue, batch, "trivial"));
      done += batch;
      await queue.prune({ olderThanSeconds: 0 });
    }
    await new Promise((r) => setTimeout(r, 1_500));
    heapAt[`after_${mark}_runs_mb`] = +(
      Number(worker.lines.at(-1)?.split(" ")[1] ?? 0) / 1048576
    ).toFixed(1);
  }
  await worker.stop();
  await store.close();
  return heapAt;
}

// ---- Redis (the two sides are in runs-redis.mjs) ----------------------------------------

async function redisTail() {
  const prefix = `nerva-bench:${randomBytes(4).toString("hex")}`;
  const store = new RedisRunStore({ url: REDIS_URL, prefix });
  const queue = new RunQueue({ store, name: "bench" });
  const runtime = new InProcessRuntime({ circuitBreaker: false });
  runtime.register("ticker", async (input, c) => {
    for (let i = 0; i < 200; i++) {
      await new Promise((r) => setTimeout(r, 5));
      await c.run.emit("bench.tick", { t: Date.now() });
    }
    return "ticked";
  });
  const runner = new Runner({
    queue,
    runtime,
    concurrency: 1,
    leaseSeconds: 30,
    heartbeatSeconds: 10,
  });
  await runner.start();
  // The tail reads through its own store (its own connections), as a server process would.
  const reader = new RunQueue({
    store: new RedisRunStore({ url: REDIS_URL, prefix }),
    name: "bench",
  });
  const run = await queue.enqueue({ handler: "ticker", input: { message: "x" }, ctx });
  const latencies = [];
  for await (const e of reader.events(run.id))
    if (e.type === "bench.tick") latencies.push(Date.now() - e.data.t);
  await runner.stop({ graceSeconds: 1 });
  await reader.store.close();
  await store.close();
  await dropPrefix(prefix);
  return { p50_ms: pct(latencies, 50), p99_ms: pct(latencies, 99), events: latencies.length };
}

const only = (process.env.RUNS_BENCH ?? "sqlite,redis,tail,heap").split(",");
const result = { bench: "runs" };
try {
  if (only.includes("sqlite")) {
    result.sqlite = [];
    for (const [workers, handler] of [
      [1, "trivial"],
      [2, "trivial"],
      [1, "three_steps"],
      [2, "three_steps"],
    ]) {
      const r = await sqliteThroughput(workers, handler, SQLITE_RUNS);
      log(`sqlite ${workers} worker process(es), ${handler}: ${r.runs_per_s} runs/s`);
      result.sqlite.push(r);
    }
  }
  if (only.includes("redis")) {
    result.redis = [];
    for (const concurrency of [16, 1]) {
      const n = concurrency === 1 ? Math.ceil(REDIS_RUNS / 3) : REDIS_RUNS;
      // Alternate the two sides so machine noise hits them alike; the best round of each, with
      // the CPU per job it cost this process and the Redis server.
      const raw = [];
      const ours = [];
      for (let i = 0; i < 2; i++) {
        raw.push(await rawBullmq(concurrency, n));
        ours.push(await nervaRedis(concurrency, n));
      }
      const best = (xs) => xs.reduce((a, b) => (b.per_s > a.per_s ? b : a));
      const [b, o] = [best(raw), best(ours)];
      const r = {
        concurrency,
        runs: n,
        raw_bullmq_jobs_per_s: b.per_s,
        nerva_runs_per_s: o.per_s,
        ratio: +(o.per_s / b.per_s).toFixed(3),
        cpu_us_per_job: {
          raw: { node: b.node_cpu_us, redis: b.redis_cpu_us },
          nerva: { node: o.node_cpu_us, redis: o.redis_cpu_us },
        },
        load_average: +loadavg()[0].toFixed(1),
      };
      log(
        `redis concurrency ${concurrency}: raw ${r.raw_bullmq_jobs_per_s}/s, nerva ${r.nerva_runs_per_s}/s, ratio ${r.ratio}; CPU µs/job raw ${b.node_cpu_us}+${b.redis_cpu_us}, nerva ${o.node_cpu_us}+${o.redis_cpu_us} (node+redis); load ${r.load_average}`,
      );
      result.redis.push(r);
    }
  }
  if (only.includes("tail")) {
    result.events_latency = { sqlite_cross_process: await sqliteTail(), redis: await redisTail() };
    log("events latency", JSON.stringify(result.events_latency));
  }
  if (only.includes("heap")) {
    result.heap = await sqliteHeap();
    log("heap", JSON.stringify(result.heap));
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log(JSON.stringify(result));
