// A worker process for the multi-process tests of durable runs (crash, fencing, outage, tail):
// a Runner over the store named by NERVA_TEST_STORE, with handlers that log what they do to
// NERVA_TEST_LOG (one JSON line each, appended). Prints "ready" once claiming.
import { appendFileSync } from "node:fs";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { RunQueue } from "./run-queue.js";
import { Runner } from "./runner.js";
import { SqliteRunStore } from "./sqlite/sqlite-run-store.js";
import type { RunStore } from "./store.js";

interface Config {
  store: "sqlite" | "redis";
  path?: string;
  redisUrl?: string;
  prefix?: string;
  busyTimeoutSeconds?: number;
  log: string;
  role: string;
  concurrency: number;
  leaseSeconds: number;
  heartbeatSeconds: number;
  stepMs: [number, number];
}

const config = JSON.parse(process.env.NERVA_TEST_CONFIG ?? "{}") as Config;
const log = (entry: Record<string, unknown>): void =>
  appendFileSync(config.log, `${JSON.stringify({ ...entry, pid: process.pid, t: Date.now() })}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const between = ([lo, hi]: [number, number]) => lo + Math.random() * (hi - lo);

async function openStore(): Promise<RunStore> {
  if (config.store === "sqlite") {
    return new SqliteRunStore({
      path: config.path as string,
      ...(config.busyTimeoutSeconds === undefined
        ? {}
        : { busyTimeoutSeconds: config.busyTimeoutSeconds }),
    });
  }
  const { RedisRunStore } = await import("./redis/redis-run-store.js");
  return new RedisRunStore({ url: config.redisUrl as string, prefix: config.prefix as string });
}

const store = await openStore();
const queue = new RunQueue({ store, name: "procs" });
const runtime = new InProcessRuntime({ timeoutSeconds: 60, circuitBreaker: false });

runtime.register("five_steps", async (input, ctx) => {
  const run = ctx.run!;
  for (let i = 1; i <= Number(input.args.steps ?? "5"); i++) {
    const key = `s${i}`;
    const value = await run.step(key, async () => {
      log({ ev: "start", run: run.runId, key, fence: run.fence });
      await sleep(between(config.stepMs));
      const v = `${process.pid}:${Math.random().toString(36).slice(2)}`;
      log({ ev: "end", run: run.runId, key, value: v });
      return v;
    });
    log({ ev: "after", run: run.runId, key, value });
  }
  return "done";
});

runtime.register("fence_probe", async (_input, ctx) => {
  const run = ctx.run!;
  await run.step("a", () => "a");
  if (config.role === "stale") {
    log({ ev: "blocking", fence: run.fence });
    const until = Date.now() + 2.5 * 1000 * config.leaseSeconds;
    while (Date.now() < until) {
      // Busy: the event loop (and so the heartbeat) is blocked past the lease.
    }
    try {
      await run.step("stale-only", () => "stale");
      log({ ev: "stale-write-accepted" });
    } catch (err) {
      log({ ev: "stale-write-refused", code: (err as { code?: string }).code });
    }
  }
  return `done by ${config.role}`;
});

runtime.register("ticker", async (input, ctx) => {
  for (let i = 0; i < Number(input.args.ticks ?? "20"); i++) {
    await sleep(Number(input.args.gapMs ?? "30"));
    await ctx.run!.emit("app.tick", { i, t: Date.now() });
  }
  return "ticked";
});

runtime.register("wait_cancel", async (_input, ctx) => {
  await ctx.run!.step("begun", () => true);
  await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve()));
  log({ ev: "aborted", run: ctx.run!.runId });
  return "should not succeed";
});

runtime.register("ask", async (_input, ctx) => {
  const before = await ctx.run!.step("before", () => {
    log({ ev: "start", run: ctx.run!.runId, key: "before" });
    return 1;
  });
  const answer = await ctx.run!.waitForInput<{ ok: boolean }>("go", { prompt: "Go?" });
  log({ ev: "answered", run: ctx.run!.runId, ok: answer.ok, before });
  return answer.ok ? "went" : "stayed";
});

const runner = new Runner({
  queue,
  runtime,
  concurrency: config.concurrency,
  leaseSeconds: config.leaseSeconds,
  heartbeatSeconds: config.heartbeatSeconds,
  workerId: `${config.role}:${process.pid}`,
  onError: (err) => log({ ev: "runner-error", message: String(err) }),
});
await runner.start();
process.stdout.write("ready\n");
process.on("SIGTERM", () => {
  void runner
    .stop({ graceSeconds: 1 })
    .then(() => store.close())
    .then(() => process.exit(0));
});
