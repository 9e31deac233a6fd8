// NODE_STARTED on the bus: a node that waits has its start written (and published) while it
// runs; a quick one is written with its commit, and still reaches subscribers before its
// NODE_COMPLETED. On the in-memory and SQLite stores, which write a quick node in one write.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { ExecContext } from "../../context/exec-context.js";
import { InMemoryRunStore } from "../../runs/memory/in-memory-store.js";
import { RunQueue } from "../../runs/run-queue.js";
import { SqliteRunStore } from "../../runs/sqlite/sqlite-run-store.js";
import type { RunStore } from "../../runs/store.js";
import { InProcessRuntime } from "../../runtime/in-process-runtime.js";
import { END, GraphHost, defineGraph, fnNode } from "../index.js";
import { RunEventType } from "../../runs/types.js";

const dir = mkdtempSync(join(tmpdir(), "nerva-node-events-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const runtimes: GraphHost[] = [];
afterEach(async () => {
  for (const r of runtimes.splice(0)) await r.stop();
});

const stores: [string, () => RunStore][] = [
  ["InMemoryRunStore", () => new InMemoryRunStore()],
  [
    "SqliteRunStore",
    () => new SqliteRunStore({ path: join(dir, `${Date.now()}-${Math.random()}.db`) }),
  ],
];

describe.each(stores)("node events on %s", (_label, make) => {
  it("publishes a waiting node's NODE_STARTED while it runs, and a quick node's before its completion", async () => {
    const seen: string[] = [];
    let released = false;
    let startedBeforeRelease = false;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const graph = defineGraph({
      name: "two",
      state: z.object({ n: z.number() }),
      nodes: {
        quick: fnNode((s: { n: number }) => ({ n: s.n + 1 })),
        slow: fnNode(async (s: { n: number }) => {
          await gate;
          return { n: s.n + 1 };
        }),
      },
      edges: [
        ["quick", "slow"],
        ["slow", END],
      ],
      entry: "quick",
    });
    const store = make();
    const runtime = new GraphHost({
      graph,
      runtime: new InProcessRuntime(),
      queue: new RunQueue({ store, name: "ev" }),
    });
    runtimes.push(runtime);
    let slowStarted!: () => void;
    const started = new Promise<void>((r) => (slowStarted = r));
    runtime.subscribe([RunEventType.NODE_STARTED, RunEventType.NODE_COMPLETED], (e) => {
      seen.push(`${e.type} ${String(e.data.node ?? "")}`);
      if (e.type === RunEventType.NODE_STARTED && e.data.node === "slow") {
        startedBeforeRelease = !released;
        slowStarted();
      }
    });
    await runtime.start();
    const id = await runtime.trigger("default", { n: 0 }, ExecContext.create());
    // The slow node's start arrives while its body still waits on the gate.
    await started;
    released = true;
    release();
    const done = await runtime.wait(id, { timeoutSeconds: 10 });
    expect(done).toMatchObject({ status: "succeeded", state: { n: 2 } });
    expect(startedBeforeRelease).toBe(true);
    await new Promise((r) => setTimeout(r, 50));
    expect(seen).toEqual([
      "node.started quick",
      "node.completed quick",
      "node.started slow",
      "node.completed slow",
    ]);
    await store.close();
  });
});
