// Graph executions across real processes on a SQLite file: workers SIGKILLed mid-graph (at least
// 20 times), pause and resume across a process restart by its id and by sessionState.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { RunQueue } from "../../runs/run-queue.js";
import { SqliteRunStore } from "../../runs/sqlite/sqlite-run-store.js";
import { InProcessRuntime } from "../../runtime/in-process-runtime.js";
import {
  graphCrashScenario,
  killGraph as kill,
  spawnGraph,
  type GraphProcessConfig,
} from "./fixtures/graph-processes.test-support.js";
import { graph as refundDesk } from "./fixtures/refund-desk.test-support.js";
import { GraphHost, type GraphRun } from "../index.js";

const dir = mkdtempSync(join(tmpdir(), "nerva-graph-procs-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("graph executions across processes (SQLite)", () => {
  it(
    "survive at least 20 SIGKILLs mid-graph: every execution completes with the uninterrupted state, no node body starts after its commit",
    { timeout: 300_000 },
    async () => {
      const store = new SqliteRunStore({ path: join(dir, "crash.db") });
      try {
        const { kills } = await graphCrashScenario({
          store,
          cleanStore: () => new SqliteRunStore({ path: join(dir, "clean.db") }),
          storeConfig: { path: join(dir, "crash.db") },
          log: join(dir, "crash.jsonl"),
        });
        expect(kills).toBeGreaterThanOrEqual(20);
      } finally {
        await store.close();
      }
    },
  );

  it(
    "pause in one process, resume in another by its id and by a sessionState after every process exited",
    { timeout: 120_000 },
    async () => {
      const path = join(dir, "pause.db");
      const log = join(dir, "pause.jsonl");
      const base: Omit<GraphProcessConfig, "mode"> = {
        graph: "refund",
        path,
        log,
        role: "p",
        stepMs: [0, 0],
      };

      // By injectInput: a worker pauses the execution and is killed; this process answers; a new
      // worker finishes it.
      const store = new SqliteRunStore({ path });
      const client = new GraphHost({
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
      await client.resume(id, "approved");
      const second = spawnGraph({ ...base, mode: "worker" });
      await second.ready;
      expect(await client.wait(id, { timeoutSeconds: 30 })).toMatchObject({
        status: "succeeded",
        output: "refunded order 5",
      });
      await kill(second);

      // By sessionState: one process pauses and exits; a fresh process resumes from the JSON.
      const pauser = spawnGraph({ ...base, mode: "pause" });
      expect(await pauser.exited).toBe(0);
      const result = JSON.parse(pauser.stdout()) as GraphRun;
      expect(result).toMatchObject({ status: "paused", pausedAt: "review" });
      const resumer = spawnGraph({ ...base, mode: "resume" }, JSON.stringify(result.sessionState));
      expect(await resumer.exited).toBe(0);
      const done = JSON.parse(resumer.stdout()) as GraphRun;
      expect(done).toMatchObject({
        status: "succeeded",
        output: "refunded order 77",
        state: { decision: "approved" },
      });
      // The path carries on from the paused execution.
      expect(done.path).toEqual(["intake#1", "lookup#1", "review#1", "refund#1"]);
      expect((await client.get(result.runId))?.status).toBe("cancelled");
      await store.close();
    },
  );
});
