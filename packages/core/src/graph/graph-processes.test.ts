// Graph executions across real processes on a SQLite file: workers SIGKILLed mid-graph (at least
// 20 times), pause and resume across a process restart by injectInput and by sessionState.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { RunQueue } from "../runs/run-queue.js";
import { SqliteRunStore } from "../runs/sqlite-run-store.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { graph as refundDesk } from "./fixtures/refund-desk.test-support.js";
import { lapsGraph } from "./fixtures/laps.test-support.js";
import { createGraphRuntime, type ExecutionResult } from "./index.js";

const dir = mkdtempSync(join(tmpdir(), "nerva-graph-procs-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
const entry = join(import.meta.dirname, "fixtures", "graph-worker.test-support.ts");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Proc {
  readonly child: ChildProcess;
  readonly ready: Promise<void>;
  readonly exited: Promise<number | null>;
  readonly stdout: () => string;
}

function spawnGraph(config: Record<string, unknown>, stdin?: string): Proc {
  const child = spawn(process.execPath, ["--import", tsx, entry], {
    env: { ...process.env, NERVA_TEST_CONFIG: JSON.stringify(config) },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stderr?.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes("ready\n")) resolve();
    });
    void exited.then((code) => reject(new Error(`process exited (${code}) before ready: ${err}`)));
  });
  ready.catch(() => undefined);
  child.stdin?.end(stdin ?? "");
  return { child, ready, exited, stdout: () => out };
}

async function kill(p: Proc): Promise<void> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  p.child.kill("SIGKILL");
  await p.exited;
}

function readLog(path: string): Record<string, unknown>[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe("graph executions across processes (SQLite)", () => {
  it(
    "survive at least 20 SIGKILLs mid-graph: every execution completes with the uninterrupted state, no node body starts after its commit",
    { timeout: 300_000 },
    async () => {
      const path = join(dir, "crash.db");
      const log = join(dir, "crash.jsonl");
      const store = new SqliteRunStore({ path });
      const parent = createGraphRuntime({
        graph: lapsGraph(() => undefined, [0, 0]),
        runtime: new InProcessRuntime(),
        queue: new RunQueue({ store, name: "procs" }),
        maxReclaims: 200,
        retry: { maxAttempts: 1 },
      });
      // The state of an uninterrupted execution, in this process.
      const clean = createGraphRuntime({
        graph: lapsGraph(() => undefined, [0, 0]),
        runtime: new InProcessRuntime(),
        queue: new RunQueue({
          store: new SqliteRunStore({ path: join(dir, "clean.db") }),
          name: "c",
        }),
      });
      await clean.start();
      const expected = await clean.triggerAndWait("default", {}, ExecContext.create(), {
        timeoutSeconds: 30,
      });
      await clean.stop();
      expect(expected.state).toEqual({ trail: ["a", "b", "c", "d", "a", "b", "c", "d"], laps: 2 });

      const ids = await Promise.all(
        Array.from({ length: 48 }, () => parent.trigger("default", {})),
      );
      const config = (role: string) => ({
        mode: "worker",
        graph: "laps",
        path,
        log,
        role,
        stepMs: [120, 300],
      });
      const workers = [spawnGraph(config("w0")), spawnGraph(config("w1"))];
      await Promise.all(workers.map((w) => w.ready));
      let kills = 0;
      const unfinished = async () => {
        const runs = await Promise.all(ids.map((id) => store.get(id)));
        return runs.filter((r) => r?.status !== "succeeded").length;
      };
      while (kills < 20) {
        await sleep(250 + Math.random() * 450);
        const open = new Map<string, number>();
        for (const e of readLog(log)) {
          const k = `${String(e.run)}/${String(e.key)}/${String(e.pid)}`;
          if (e.ev === "start") open.set(k, e.pid as number);
          else if (e.ev === "end") open.delete(k);
        }
        const busy = new Set(open.values());
        const i = workers.findIndex((w) => busy.has(w.child.pid as number));
        if (i < 0) {
          if ((await unfinished()) === 0) break;
          continue;
        }
        await kill(workers[i] as Proc);
        kills += 1;
        workers[i] = spawnGraph(config(`w${i}r${kills}`));
        await (workers[i] as Proc).ready;
      }
      const results: ExecutionResult[] = await Promise.all(
        ids.map((id) => parent.wait(id, { timeoutSeconds: 240 })),
      );
      await Promise.all(workers.map((w) => kill(w)));
      expect(kills).toBeGreaterThanOrEqual(20);
      const entries = readLog(log);
      let replayedCommits = 0;
      for (const r of results) {
        expect(r.status, r.executionId).toBe("completed");
        expect(r.state).toEqual(expected.state);
        expect(r.path).toEqual(["a#1", "b#1", "c#1", "d#1", "a#2", "b#2", "c#2", "d#2"]);
        const events = await store.readEvents(r.executionId, 0, 100_000);
        expect(events.filter((e) => e.type === "run.succeeded")).toHaveLength(1);
        const committedAt = new Map<string, number>();
        for (const e of events) {
          if (e.type !== "step.completed") continue;
          expect(committedAt.has(String(e.data.key)), `${String(e.data.key)} committed twice`).toBe(
            false,
          );
          committedAt.set(String(e.data.key), e.at);
        }
        for (const [key, at] of committedAt) {
          const starts = entries.filter(
            (e) => e.run === r.executionId && e.ev === "start" && e.key === key,
          );
          expect(starts.length).toBeGreaterThanOrEqual(1);
          for (const s of starts)
            expect(
              s.t as number,
              `${r.executionId}/${key} ran after its commit`,
            ).toBeLessThanOrEqual(at);
        }
        replayedCommits += events.filter((e) => e.type === "run.reclaimed").length;
      }
      // The kills really interrupted executions that had committed nodes.
      expect(replayedCommits).toBeGreaterThan(0);
      await store.close();
    },
  );

  it(
    "pause in one process, resume in another by injectInput and by a sessionState after every process exited",
    { timeout: 120_000 },
    async () => {
      const path = join(dir, "pause.db");
      const log = join(dir, "pause.jsonl");
      const base = { graph: "refund", path, log, role: "p", stepMs: [0, 0] };

      // By injectInput: a worker pauses the execution and is killed; this process answers; a new
      // worker finishes it.
      const store = new SqliteRunStore({ path });
      const client = createGraphRuntime({
        graph: refundDesk,
        runtime: new InProcessRuntime(),
        queue: new RunQueue({ store, name: "procs" }),
      });
      const id = await client.trigger("default", { orderId: "5" });
      const first = spawnGraph({ ...base, mode: "worker" });
      await first.ready;
      const paused = await client.wait(id, { timeoutSeconds: 30 });
      expect(paused).toMatchObject({
        status: "paused",
        pausedAt: "review",
        state: { orderId: "5", total: 42 },
      });
      await kill(first);
      await client.injectInput(id, "review", "approved");
      const second = spawnGraph({ ...base, mode: "worker" });
      await second.ready;
      expect(await client.wait(id, { timeoutSeconds: 30 })).toMatchObject({
        status: "completed",
        output: "refunded order 5",
      });
      await kill(second);

      // By sessionState: one process pauses and exits; a fresh process resumes from the JSON.
      const pauser = spawnGraph({ ...base, mode: "pause" });
      expect(await pauser.exited).toBe(0);
      const result = JSON.parse(pauser.stdout()) as ExecutionResult;
      expect(result).toMatchObject({ status: "paused", pausedAt: "review" });
      const resumer = spawnGraph({ ...base, mode: "resume" }, JSON.stringify(result.sessionState));
      expect(await resumer.exited).toBe(0);
      const done = JSON.parse(resumer.stdout()) as ExecutionResult;
      expect(done).toMatchObject({
        status: "completed",
        output: "refunded order 77",
        state: { decision: "approved" },
      });
      // The path carries on from the paused execution.
      expect(done.path).toEqual(["intake#1", "lookup#1", "review#1", "refund#1"]);
      expect((await client.getExecution(result.executionId))?.status).toBe("cancelled");
      await store.close();
    },
  );
});
