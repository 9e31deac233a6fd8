// Cancel and deadline latency (DESIGN §5, issue "cancel stops the work at once"): from the call to
// the handler's ctx.signal aborting, p50/p99 over CANCEL_RUNS runs each, with the default
// heartbeat (10 s), so a figure near 10 s would mean the abort waited for a heartbeat.
// 1. queue.cancel of a running run, worker in the same process: in memory, SQLite, Redis.
// 2. GraphHost.cancel of a running node, same process: in memory, SQLite, Redis.
// 3. queue.cancel, worker in another process: SQLite (data_version watch), Redis (pub/sub).
// 4. A run's deadline (timeoutSeconds 0.05): lateness of the abort after ctx.timeoutAt.
// Target: p99 <= 100 ms for each. No baseline: the figure is absolute.
// Run: pnpm build && node --expose-gc bench/cancel.bench.mjs (or: pnpm bench cancel).
// Needs Redis at NERVA_REDIS_URL (default redis://127.0.0.1:6379).
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import {
  END,
  ExecContext,
  InMemoryRunStore,
  InProcessRuntime,
  RunQueue,
  Runner,
  GraphHost,
  defineGraph,
  fnNode,
} from "@nerva/core";
import { RedisRunStore } from "@nerva/core/redis";
import { SqliteRunStore } from "@nerva/core/sqlite";
import { REDIS_URL, dropPrefix } from "./runs-redis.mjs";

const RUNS = Number(process.env.CANCEL_RUNS ?? 100);
const dir = mkdtempSync(join(tmpdir(), "nerva-bench-cancel-"));
const ctx = ExecContext.create({ userId: "bench" });
const now = () => performance.timeOrigin + performance.now();
const sorted = (xs) => [...xs].sort((a, b) => a - b);
const pct = (xs, p) => sorted(xs)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];
const round = (x) => Math.round(x * 100) / 100;
const summary = (xs) => ({
  p50_ms: round(pct(xs, 50)),
  p99_ms: round(pct(xs, 99)),
  runs: xs.length,
});
const log = (...a) => console.error(...a);
const prefixes = [];

function openStore(kind) {
  if (kind === "memory") return new InMemoryRunStore();
  if (kind === "sqlite")
    return new SqliteRunStore({ path: join(dir, `${kind}-${randomBytes(3).toString("hex")}.db`) });
  const prefix = `nerva-bench-cancel-${randomBytes(4).toString("hex")}`;
  prefixes.push(prefix);
  return new RedisRunStore({ url: REDIS_URL, prefix });
}

/** Handlers that tell when they start and when their signal aborts (keyed by run id). */
function probes() {
  const started = new Map();
  const aborted = new Map();
  const waiter = (map, id) => {
    let entry = map.get(id);
    if (entry === undefined) {
      let resolve;
      const promise = new Promise((r) => (resolve = r));
      map.set(id, (entry = { promise, resolve }));
    }
    return entry;
  };
  return {
    start: (id) => waiter(started, id).resolve(),
    abort: (id, at) => waiter(aborted, id).resolve(at),
    started: (id) => waiter(started, id).promise,
    aborted: (id) => waiter(aborted, id).promise,
  };
}

async function runCancel(kind) {
  const store = openStore(kind);
  const queue = new RunQueue({ store, name: "bench" });
  const runtime = new InProcessRuntime({ timeoutSeconds: 600, circuitBreaker: false });
  const p = probes();
  runtime.register("wait", async (_input, c) => {
    p.start(c.run.runId);
    await new Promise((r) => c.signal.addEventListener("abort", r));
    p.abort(c.run.runId, now());
    return "stopped";
  });
  const runner = new Runner({ queue, runtime, concurrency: 4 });
  await runner.start();
  const latencies = [];
  for (let i = 0; i < RUNS; i++) {
    const run = await queue.enqueue({ handler: "wait", input: { message: "x" }, ctx });
    await p.started(run.id);
    const t0 = now();
    await queue.cancel(run.id);
    latencies.push((await p.aborted(run.id)) - t0);
  }
  await runner.stop({ graceSeconds: 1 });
  await store.close();
  return summary(latencies);
}

async function graphCancel(kind) {
  const store = openStore(kind);
  const p = probes();
  const graph = defineGraph({
    name: "waits",
    state: z.object({ done: z.boolean().optional() }),
    nodes: {
      wait: fnNode(async (_s, c) => {
        p.start(c.runId);
        await new Promise((r) => c.signal.addEventListener("abort", r));
        p.abort(c.runId, now());
        return { done: true };
      }),
    },
    edges: [["wait", END]],
    entry: "wait",
  });
  const host = new GraphHost({
    graph,
    runtime: new InProcessRuntime(),
    queue: new RunQueue({ store, name: "graph", retry: { maxAttempts: 1 } }),
  });
  await host.start();
  const latencies = [];
  for (let i = 0; i < RUNS; i++) {
    const id = await host.trigger("default", {});
    await p.started(id);
    const t0 = now();
    await host.cancel(id);
    latencies.push((await p.aborted(id)) - t0);
  }
  await host.stop({ graceSeconds: 1 });
  await store.close();
  return summary(latencies);
}

async function deadline(kind) {
  const store = openStore(kind);
  const queue = new RunQueue({ store, name: "bench", retry: { maxAttempts: 1 } });
  const runtime = new InProcessRuntime({ timeoutSeconds: 600, circuitBreaker: false });
  const p = probes();
  runtime.register("wait", async (_input, c) => {
    await new Promise((r) => c.signal.addEventListener("abort", r));
    p.abort(c.run.runId, now() - c.timeoutAt);
    return "stopped";
  });
  const runner = new Runner({ queue, runtime, concurrency: 4 });
  await runner.start();
  const lateness = [];
  for (let i = 0; i < RUNS; i++) {
    const run = await queue.enqueue({
      handler: "wait",
      input: { message: "x" },
      ctx,
      timeoutSeconds: 0.05,
    });
    lateness.push(await p.aborted(run.id));
  }
  await runner.stop({ graceSeconds: 1 });
  await store.close();
  return summary(lateness);
}

// A worker in another process: prints "started <id>" and "aborted <id> <epoch ms>".
const workerSource = (kind, where) => `
  import { InProcessRuntime, RunQueue, Runner } from "@nerva/core";
  const store = ${
    kind === "sqlite"
      ? `new (await import("@nerva/core/sqlite")).SqliteRunStore({ path: ${JSON.stringify(where)} })`
      : `new (await import("@nerva/core/redis")).RedisRunStore({ url: ${JSON.stringify(REDIS_URL)}, prefix: ${JSON.stringify(where)} })`
  };
  const queue = new RunQueue({ store, name: "bench" });
  const runtime = new InProcessRuntime({ timeoutSeconds: 600, circuitBreaker: false });
  const now = () => performance.timeOrigin + performance.now();
  runtime.register("wait", async (_input, c) => {
    process.stdout.write("started " + c.run.runId + "\\n");
    await new Promise((r) => c.signal.addEventListener("abort", r));
    process.stdout.write("aborted " + c.run.runId + " " + now() + "\\n");
    return "stopped";
  });
  const runner = new Runner({ queue, runtime, concurrency: 4 });
  await runner.start();
  process.stdout.write("ready\\n");
  process.on("SIGTERM", () => runner.stop({ graceSeconds: 1 }).then(() => store.close()).then(() => process.exit(0)));
`;

async function crossProcessCancel(kind) {
  const where =
    kind === "sqlite"
      ? join(dir, `procs-${randomBytes(3).toString("hex")}.db`)
      : `nerva-bench-cancel-${randomBytes(4).toString("hex")}`;
  if (kind === "redis") prefixes.push(where);
  const store =
    kind === "sqlite"
      ? new SqliteRunStore({ path: where })
      : new RedisRunStore({ url: REDIS_URL, prefix: where });
  const queue = new RunQueue({ store, name: "bench" });
  const child = spawn(process.execPath, ["--input-type=module", "-e", workerSource(kind, where)], {
    cwd: process.cwd(),
    stdio: ["ignore", "pipe", "inherit"],
  });
  const p = probes();
  let ready;
  const isReady = new Promise((r) => (ready = r));
  let buffer = "";
  child.stdout.on("data", (d) => {
    buffer += d.toString();
    const lines = buffer.split("\n");
    buffer = lines.pop();
    for (const line of lines) {
      const [word, id, at] = line.split(" ");
      if (word === "ready") ready();
      else if (word === "started") p.start(id);
      else if (word === "aborted") p.abort(id, Number(at));
    }
  });
  await isReady;
  const latencies = [];
  for (let i = 0; i < RUNS; i++) {
    const run = await queue.enqueue({ handler: "wait", input: { message: "x" }, ctx });
    await p.started(run.id);
    const t0 = now();
    await queue.cancel(run.id);
    latencies.push((await p.aborted(run.id)) - t0);
  }
  await new Promise((r) => (child.once("exit", r), child.kill("SIGTERM")));
  await store.close();
  return summary(latencies);
}

const result = {
  bench: "cancel",
  load: loadavg()[0].toFixed(2),
  same_process: {},
  graph: {},
  cross_process: {},
  deadline: {},
};
try {
  for (const kind of ["memory", "sqlite", "redis"]) {
    result.same_process[kind] = await runCancel(kind);
    log("run cancel, same process", kind, result.same_process[kind]);
    result.graph[kind] = await graphCancel(kind);
    log("graph cancel, same process", kind, result.graph[kind]);
    result.deadline[kind] = await deadline(kind);
    log("run deadline lateness", kind, result.deadline[kind]);
  }
  for (const kind of ["sqlite", "redis"]) {
    result.cross_process[kind] = await crossProcessCancel(kind);
    log("run cancel, across processes", kind, result.cross_process[kind]);
  }
} finally {
  for (const prefix of prefixes) await dropPrefix(prefix);
  rmSync(dir, { recursive: true, force: true });
}
console.log(JSON.stringify(result));
process.exit(0);
