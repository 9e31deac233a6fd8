// Worker processes for the multi-process tests of durable runs: each runs
// run-worker.test-support.ts under tsx with a JSON config, and says "ready" once it claims.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
const entry = join(here, "run-worker.test-support.ts");

export interface WorkerConfig {
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

export interface WorkerProcess {
  readonly child: ChildProcess;
  /** Resolves once the worker claims runs; rejects if it exits first. */
  readonly ready: Promise<void>;
  readonly exited: Promise<number | null>;
}

/** Starts one worker process. */
export function startWorker(config: WorkerConfig): WorkerProcess {
  const child = spawn(process.execPath, ["--import", tsx, entry], {
    env: { ...process.env, NERVA_TEST_CONFIG: JSON.stringify(config) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const ready = new Promise<void>((resolve, reject) => {
    let out = "";
    child.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes("ready\n")) resolve();
    });
    void exited.then((code) =>
      reject(new Error(`worker exited (${code}) before ready: ${stderr}`)),
    );
  });
  ready.catch(() => undefined);
  return { child, ready, exited };
}

/** Kills a worker with SIGKILL and waits for it to be gone. */
export async function killHard(worker: WorkerProcess): Promise<void> {
  if (worker.child.exitCode !== null || worker.child.signalCode !== null) return;
  worker.child.kill("SIGKILL");
  await worker.exited;
}

/** The JSON lines a worker log holds so far. */
export function readLog(path: string): Record<string, unknown>[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}
