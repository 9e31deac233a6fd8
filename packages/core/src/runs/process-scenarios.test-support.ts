// Multi-process scenarios of durable runs, shared by the SQLite and Redis tests: real worker
// processes (run-worker.test-support.ts), real SIGKILLs, the store under test in this process.
import { expect } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import {
  killHard,
  readLog,
  startWorker,
  type WorkerConfig,
  type WorkerProcess,
} from "./processes.test-support.js";
import { RunQueue } from "./run-queue.js";
import { Runner } from "./runner.js";
import type { RunStore } from "./store.js";
import type { RunEvent, RunRecord } from "./types.js";

export interface ScenarioEnv {
  /** The store under test, opened in this process. */
  readonly store: RunStore;
  /** A worker config for `role`, logging to `log`. */
  readonly worker: (role: string, log: string, overrides?: Partial<WorkerConfig>) => WorkerConfig;
  /** A fresh log file path. */
  readonly logFile: () => string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ctx = () => ExecContext.create({ userId: "ops" });

async function stopAll(workers: WorkerProcess[]): Promise<void> {
  await Promise.all(workers.map((w) => killHard(w)));
}

async function history(store: RunStore, id: string): Promise<RunEvent[]> {
  return store.readEvents(id, 0, 100_000);
}

/**
 * Pids of workers in the middle of a step body after their run committed a step (so a kill there
 * forces a replay of committed steps).
 */
function midRun(log: Record<string, unknown>[]): Set<number> {
  const open = new Map<string, { pid: number; key: string }>();
  for (const e of log) {
    const id = `${String(e.run)}/${String(e.key)}/${String(e.pid)}`;
    if (e.ev === "start") open.set(id, { pid: e.pid as number, key: String(e.key) });
    else if (e.ev === "end") open.delete(id);
  }
  return new Set([...open.values()].filter((o) => o.key !== "s1").map((o) => o.pid));
}

/**
 * Checks what a crash or outage must never break: every run succeeded once, fences grew, no step
 * body started after its step committed, and every replay got the committed value.
 */
export async function checkExactlyOnceCommits(
  store: RunStore,
  runs: readonly RunRecord[],
  logPath: string,
): Promise<{ bodies: number; replays: number }> {
  const log = readLog(logPath);
  let bodies = 0;
  let replays = 0;
  for (const run of runs) {
    const final = await store.get(run.id);
    expect(final?.status, `run ${run.id}`).toBe("succeeded");
    const events = await history(store, run.id);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.filter((e) => e.type === "run.succeeded")).toHaveLength(1);
    const fences = events
      .filter((e) => e.type === "run.started")
      .map((e) => e.data.fence as number);
    for (let i = 1; i < fences.length; i++)
      expect(fences[i]).toBeGreaterThan(fences[i - 1] as number);
    const committedAt = new Map<string, number>();
    for (const e of events) {
      if (e.type === "step.completed") {
        expect(
          committedAt.has(e.data.key as string),
          `${run.id} ${String(e.data.key)} committed twice`,
        ).toBe(false);
        committedAt.set(e.data.key as string, e.at);
      }
    }
    const mine = log.filter((e) => e.run === run.id);
    for (const [key, at] of committedAt) {
      const starts = mine.filter((e) => e.ev === "start" && e.key === key);
      bodies += starts.length;
      for (const s of starts)
        expect(s.t as number, `${run.id}/${key} body after commit`).toBeLessThanOrEqual(at);
      const afters = mine.filter((e) => e.ev === "after" && e.key === key);
      replays += afters.length - 1;
      const values = new Set(afters.map((e) => e.value));
      expect(values.size, `${run.id}/${key} replays got one value`).toBe(1);
      const ends = new Set(mine.filter((e) => e.ev === "end" && e.key === key).map((e) => e.value));
      expect(ends.has([...values][0]), `${run.id}/${key} value came from a body`).toBe(true);
    }
  }
  return { bodies, replays };
}

/**
 * Two worker processes execute runs of 5 steps (20, and more while fewer than `kills` kills
 * have landed, so the count does not depend on the machine's speed) while a killer SIGKILLs a
 * worker in the middle of a step body and restarts it, until `kills` kills.
 */
export async function crashScenario(env: ScenarioEnv, kills = 20): Promise<{ kills: number }> {
  const log = env.logFile();
  const queue = new RunQueue({ store: env.store, name: "procs", maxReclaims: 200 });
  const runs: RunRecord[] = [];
  const enqueue = async (n: number) => {
    const more = await Promise.all(
      Array.from({ length: n }, () =>
        queue.enqueue({
          handler: "five_steps",
          input: { message: `r${runs.length}` },
          ctx: ctx(),
        }),
      ),
    );
    runs.push(...more);
  };
  await enqueue(20);
  const config = (role: string) =>
    env.worker(role, log, {
      concurrency: 2,
      leaseSeconds: 1,
      heartbeatSeconds: 0.25,
      stepMs: [250, 550],
    });
  const workers = [startWorker(config("a")), startWorker(config("b"))];
  let killed = 0;
  try {
    await Promise.all(workers.map((w) => w.ready));
    const deadline = Date.now() + 150_000;
    while (killed < kills && Date.now() < deadline) {
      await sleep(100 + Math.random() * 200);
      const open = midRun(readLog(log));
      const index = workers.findIndex((w) => open.has(w.child.pid as number));
      if (index < 0) {
        const left = await Promise.all(runs.map((r) => env.store.get(r.id)));
        if (left.filter((r) => r?.status !== "succeeded").length < 4) await enqueue(8);
        continue;
      }
      await killHard(workers[index] as WorkerProcess);
      killed += 1;
      const fresh = startWorker(config(index === 0 ? "a" : "b"));
      workers[index] = fresh;
      await fresh.ready;
    }
    for (const run of runs) await queue.wait(run.id, { timeoutSeconds: 120 });
  } finally {
    await stopAll(workers);
  }
  expect(killed).toBeGreaterThanOrEqual(kills);
  const { replays } = await checkExactlyOnceCommits(env.store, runs, log);
  // The kills landed mid-run: some handlers replayed committed steps.
  expect(replays).toBeGreaterThan(0);
  const reclaimed = await Promise.all(
    runs.map(async (r) => (await env.store.get(r.id))?.reclaims ?? 0),
  );
  expect(reclaimed.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
  return { kills: killed };
}

/**
 * A worker process blocks its event loop past its lease; a worker in this process takes the run
 * over and finishes it; the stale worker's next write (a step nobody else commits) is refused.
 */
export async function fencingScenario(env: ScenarioEnv): Promise<void> {
  const log = env.logFile();
  const queue = new RunQueue({ store: env.store, name: "procs" });
  const stale = startWorker(
    env.worker("stale", log, { concurrency: 1, leaseSeconds: 1, heartbeatSeconds: 0.25 }),
  );
  const runtime = new InProcessRuntime({ circuitBreaker: false });
  runtime.register("fence_probe", async (_i, c) => {
    await c.run!.step("a", () => "a");
    return "done by fresh";
  });
  const fresh = new Runner({
    queue,
    runtime,
    leaseSeconds: 1,
    heartbeatSeconds: 0.25,
    workerId: "fresh",
  });
  try {
    await stale.ready;
    const run = await queue.enqueue({
      handler: "fence_probe",
      input: { message: "x" },
      ctx: ctx(),
    });
    const deadline = Date.now() + 20_000;
    while (!readLog(log).some((e) => e.ev === "blocking") && Date.now() < deadline) await sleep(20);
    await fresh.start();
    const done = await queue.wait(run.id, { timeoutSeconds: 20 });
    expect(done).toMatchObject({
      status: "succeeded",
      result: { output: "done by fresh" },
      reclaims: 1,
    });
    while (
      !readLog(log).some((e) => String(e.ev).startsWith("stale-write")) &&
      Date.now() < deadline
    ) {
      await sleep(20);
    }
    const verdicts = readLog(log).filter((e) => String(e.ev).startsWith("stale-write"));
    expect(verdicts).toEqual([
      expect.objectContaining({ ev: "stale-write-refused", code: "LEASE_LOST" }),
    ]);
    await sleep(300);
    const events = await history(env.store, run.id);
    expect(events.filter((e) => e.data.key === "stale-only")).toEqual([]);
    expect(events.filter((e) => e.type === "run.succeeded")).toHaveLength(1);
    expect(events.at(-1)?.type).toBe("run.succeeded");
    expect((await env.store.get(run.id))?.result?.output).toBe("done by fresh");
  } finally {
    await fresh.stop({ graceSeconds: 0 });
    await killHard(stale);
  }
}

/** Events written by a worker process reach a tail in this process within `maxLatencyMs`. */
export async function tailScenario(env: ScenarioEnv, maxLatencyMs: number): Promise<number[]> {
  const log = env.logFile();
  const queue = new RunQueue({ store: env.store, name: "procs" });
  const worker = startWorker(env.worker("ticker", log, { concurrency: 1 }));
  try {
    await worker.ready;
    const run = await queue.enqueue({
      handler: "ticker",
      input: { message: "x", args: { ticks: "30", gapMs: "40" } },
      ctx: ctx(),
    });
    const latencies: number[] = [];
    for await (const e of queue.events(run.id)) {
      if (e.type === "app.tick") latencies.push(Date.now() - (e.data.t as number));
    }
    expect(latencies).toHaveLength(30);
    const sorted = [...latencies].sort((a, b) => a - b);
    expect(
      sorted[Math.floor(sorted.length / 2)],
      `median of ${sorted.join(",")}`,
    ).toBeLessThanOrEqual(maxLatencyMs);
    expect(
      sorted[Math.floor(sorted.length * 0.9)],
      `p90 of ${sorted.join(",")}`,
    ).toBeLessThanOrEqual(maxLatencyMs);
    return sorted;
  } finally {
    await killHard(worker);
  }
}

/**
 * The store becomes unreachable for about 2 s in the middle of 10 runs of two worker processes
 * (`outage` makes it so and resolves when it is over): every run still finishes, once.
 */
export async function outageScenario(
  env: ScenarioEnv,
  outage: () => Promise<void>,
  overrides: Partial<WorkerConfig> = {},
): Promise<void> {
  const log = env.logFile();
  const queue = new RunQueue({
    store: env.store,
    name: "procs",
    retry: { maxAttempts: 10, initialDelaySeconds: 0.1 },
  });
  const config = (role: string) =>
    env.worker(role, log, {
      concurrency: 3,
      leaseSeconds: 5,
      heartbeatSeconds: 1,
      stepMs: [100, 250],
      ...overrides,
    });
  const workers = [startWorker(config("a")), startWorker(config("b"))];
  try {
    await Promise.all(workers.map((w) => w.ready));
    const runs = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        queue.enqueue({ handler: "five_steps", input: { message: `o${i}` }, ctx: ctx() }),
      ),
    );
    const deadline = Date.now() + 20_000;
    while (readLog(log).filter((e) => e.ev === "after").length < 8 && Date.now() < deadline)
      await sleep(20);
    // The outage lands mid-run: steps were done, and not all of them.
    const before = readLog(log).filter((e) => e.ev === "after").length;
    expect(before).toBeGreaterThanOrEqual(8);
    expect(before).toBeLessThan(runs.length * 5);
    await outage();
    for (const run of runs) await queue.wait(run.id, { timeoutSeconds: 60 });
    await checkExactlyOnceCommits(env.store, runs, log);
  } finally {
    await stopAll(workers);
  }
}

/** Cancel and pause/resume of runs whose worker process was SIGKILLed. */
export async function killedWorkerScenario(env: ScenarioEnv): Promise<void> {
  const log = env.logFile();
  const queue = new RunQueue({ store: env.store, name: "procs" });
  const config = (role: string) =>
    env.worker(role, log, { concurrency: 2, leaseSeconds: 1, heartbeatSeconds: 0.25 });
  let worker = startWorker(config("first"));
  try {
    await worker.ready;
    const cancelMe = await queue.enqueue({
      handler: "wait_cancel",
      input: { message: "x" },
      ctx: ctx(),
    });
    const askMe = await queue.enqueue({ handler: "ask", input: { message: "x" }, ctx: ctx() });
    await queue.wait(askMe.id, { until: ["paused"], timeoutSeconds: 20 });
    for await (const e of queue.events(cancelMe.id)) if (e.type === "step.completed") break;
    await killHard(worker);
    // The holder is gone: the cancel is recorded now and applied by whoever takes the run over.
    expect((await queue.cancel(cancelMe.id)).status).toBe("running");
    await queue.resume(askMe.id, { ok: true }, { key: "go" });
    worker = startWorker(config("second"));
    await worker.ready;
    const cancelled = await queue.wait(cancelMe.id, { timeoutSeconds: 20 });
    expect(cancelled.status).toBe("cancelled");
    const resumed = await queue.wait(askMe.id, { timeoutSeconds: 20 });
    expect(resumed).toMatchObject({ status: "succeeded", result: { output: "went" } });
    const lines = readLog(log).filter((e) => e.run === askMe.id);
    expect(lines.filter((e) => e.ev === "start")).toHaveLength(1);
    expect(lines.filter((e) => e.ev === "answered")).toEqual([
      expect.objectContaining({ ok: true, before: 1 }),
    ]);
    // A cancel that reaches a live worker in another process aborts the handler's signal.
    const live = await queue.enqueue({
      handler: "wait_cancel",
      input: { message: "y" },
      ctx: ctx(),
    });
    for await (const e of queue.events(live.id)) if (e.type === "step.completed") break;
    await queue.cancel(live.id, { reason: "test" });
    expect((await queue.wait(live.id, { timeoutSeconds: 20 })).status).toBe("cancelled");
    expect(readLog(log).some((e) => e.ev === "aborted" && e.run === live.id)).toBe(true);
  } finally {
    await killHard(worker);
  }
}

/**
 * A cancel asked in this process reaches the handler of a worker in another process at once,
 * through the store's own notice: its heartbeats are a minute apart, so an abort that waited for
 * one would come after the test's timeout.
 */
export async function crossProcessCancelScenario(env: ScenarioEnv): Promise<void> {
  const log = env.logFile();
  const queue = new RunQueue({ store: env.store, name: "procs" });
  const worker = startWorker(
    env.worker("slow-beat", log, { concurrency: 2, leaseSeconds: 120, heartbeatSeconds: 60 }),
  );
  try {
    await worker.ready;
    for (let i = 0; i < 3; i++) {
      const run = await queue.enqueue({
        handler: "wait_cancel",
        input: { message: `c${i}` },
        ctx: ctx(),
      });
      for await (const e of queue.events(run.id)) if (e.type === "step.completed") break;
      await queue.cancel(run.id, { reason: "stop" });
      expect((await queue.wait(run.id, { timeoutSeconds: 15 })).status).toBe("cancelled");
      expect(readLog(log).some((e) => e.ev === "aborted" && e.run === run.id)).toBe(true);
    }
  } finally {
    await killHard(worker);
  }
}
