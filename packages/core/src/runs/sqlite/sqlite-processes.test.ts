// SqliteRunStore across real processes: crash (SIGKILLs mid-step), fencing, a held write lock,
// cancel and resume across a killed worker, and the cross-process event tail.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
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
import { SqliteRunStore } from "./sqlite-run-store.js";

const dir = mkdtempSync(join(tmpdir(), "nerva-runs-procs-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const stores: SqliteRunStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
});

function env(): ScenarioEnv & { path: string } {
  const path = join(dir, `procs-${++n}.db`);
  const store = new SqliteRunStore({ path });
  stores.push(store);
  let logs = 0;
  return {
    path,
    store,
    logFile: () => join(dir, `log-${n}-${++logs}.jsonl`),
    worker: (role: string, log: string, overrides: Partial<WorkerConfig> = {}): WorkerConfig => ({
      store: "sqlite",
      path,
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

/** Holds the file's write lock from another process for `ms`; resolves when released. */
function holdWriteLock(path: string, ms: number): Promise<void> {
  const driver = createRequire(import.meta.url).resolve("better-sqlite3");
  const script = `
    const Database = require(${JSON.stringify(driver)});
    const db = new Database(${JSON.stringify(path)});
    db.exec("BEGIN IMMEDIATE");
    process.stdout.write("locked\\n");
    setTimeout(() => { db.exec("COMMIT"); db.close(); }, ${ms});
  `;
  const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    child.on("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`locker exited ${code}`)),
    );
  });
}

describe("SqliteRunStore across processes", () => {
  it(
    "survives at least 20 SIGKILLs of workers mid-step: every run succeeds, no step re-runs after its commit",
    { timeout: 240_000 },
    async () => {
      const { kills } = await crashScenario(env(), 20);
      expect(kills).toBeGreaterThanOrEqual(20);
    },
  );

  it(
    "refuses the next write of a worker that blocked past its lease while another finished the run",
    { timeout: 60_000 },
    async () => {
      await fencingScenario(env());
    },
  );

  it(
    "finishes every run once through a 2 s write lock held by another process",
    { timeout: 120_000 },
    async () => {
      const e = env();
      // A short busy timeout: the workers see UNAVAILABLE during the lock and must ride it out.
      await outageScenario(e, () => holdWriteLock(e.path, 2_000), { busyTimeoutSeconds: 0.2 });
    },
  );

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
