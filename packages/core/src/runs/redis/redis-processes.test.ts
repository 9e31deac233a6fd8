// RedisRunStore across real processes: crash (SIGKILLs mid-step), fencing, CLIENT PAUSE,
// cancel and resume across a killed worker, and the event tail.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, afterEach, describe, it } from "vitest";
import {
  crashScenario,
  crossProcessCancelScenario,
  fencingScenario,
  killedWorkerScenario,
  outageScenario,
  tailScenario,
  type ScenarioEnv,
} from "../process-scenarios.test-support.js";
import type { WorkerConfig } from "../processes.test-support.js";
import { RedisRunStore } from "./redis-run-store.js";
import { REDIS_URL, dropPrefixes, testPrefix } from "./redis.test-support.js";

const dir = mkdtempSync(join(tmpdir(), "nerva-runs-redis-"));
const prefixes: string[] = [];
const stores: RedisRunStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await dropPrefixes(prefixes);
});
let n = 0;

function env(): ScenarioEnv {
  const prefix = testPrefix("procs");
  prefixes.push(prefix);
  const store = new RedisRunStore({ url: REDIS_URL, prefix });
  stores.push(store);
  const id = ++n;
  let logs = 0;
  return {
    store,
    logFile: () => join(dir, `log-${id}-${++logs}.jsonl`),
    worker: (role: string, log: string, overrides: Partial<WorkerConfig> = {}): WorkerConfig => ({
      store: "redis",
      redisUrl: REDIS_URL,
      prefix,
      log,
      role,
      concurrency: 2,
      leaseSeconds: 2,
      heartbeatSeconds: 0.5,
      stepMs: [20, 60],
      ...overrides,
    }),
  };
}

/** Pauses every Redis client for `ms` (CLIENT PAUSE); resolves when it is over. */
async function pauseRedis(ms: number): Promise<void> {
  const admin = new Redis(REDIS_URL);
  try {
    await admin.call("CLIENT", "PAUSE", String(ms), "ALL");
  } finally {
    admin.disconnect();
  }
  await new Promise((r) => setTimeout(r, ms));
}

describe("RedisRunStore across processes", () => {
  it(
    "survives at least 20 SIGKILLs of workers mid-step: every run succeeds, no step re-runs after its commit",
    { timeout: 240_000 },
    async () => {
      await crashScenario(env(), 20);
    },
  );

  it(
    "refuses the next write of a worker that blocked past its lease while another finished the run",
    { timeout: 60_000 },
    async () => {
      await fencingScenario(env());
    },
  );

  it("finishes every run once through a 2 s CLIENT PAUSE", { timeout: 120_000 }, async () => {
    await outageScenario(env(), () => pauseRedis(2_000));
  });

  it(
    "cancels and resumes runs whose worker process was SIGKILLed",
    { timeout: 60_000 },
    async () => {
      await killedWorkerScenario(env());
    },
  );

  it(
    "a cancel reaches a worker in another process at once, not at its next heartbeat",
    { timeout: 60_000 },
    async () => {
      await crossProcessCancelScenario(env());
    },
  );

  it(
    "delivers another process's events to a live tail within 50 ms",
    { timeout: 60_000 },
    async () => {
      await tailScenario(env(), 50);
    },
  );
});
