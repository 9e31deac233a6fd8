// The watcher that feeds the event bus keeps an entry per execution only while it follows it:
// executions that end (completed, cancelled, superseded by their sessionState) leave nothing
// behind, whether or not anybody listens. Real SQLite store on a temporary file.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { ExecContext } from "../../context/exec-context.js";
import { RunQueue } from "../../runs/run-queue.js";
import { SqliteRunStore } from "../../runs/sqlite/sqlite-run-store.js";
import { InProcessRuntime } from "../../runtime/in-process-runtime.js";
import { END, GraphHost, defineGraph, fnNode, inputNode } from "../index.js";
import { RunEventType, type RunEvent } from "../../runs/types.js";

const dir = mkdtempSync(join(tmpdir(), "nerva-watcher-"));
const stores: SqliteRunStore[] = [];
const runtimes: GraphHost[] = [];
afterEach(async () => {
  for (const r of runtimes.splice(0)) await r.stop({ graceSeconds: 0 });
  for (const s of stores.splice(0)) await s.close();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const S = z.object({ n: z.number().optional(), ok: z.string().optional() });

function graphOf(pausing: boolean, slowMs = 0) {
  return defineGraph({
    name: "watched",
    state: S,
    nodes: pausing
      ? {
          a: fnNode<z.output<typeof S>>(async () => ({ n: 1 })),
          ask: inputNode<z.output<typeof S>>({ prompt: "ok?", writes: "ok", schema: z.string() }),
        }
      : {
          a: fnNode<z.output<typeof S>>(async () => {
            await new Promise((r) => setTimeout(r, slowMs));
            return { n: 1 };
          }),
        },
    edges: pausing
      ? [
          ["a", "ask"],
          ["ask", END],
        ]
      : [["a", END]],
    entry: "a",
  });
}

function make(pausing: boolean, file: string, slowMs = 0): GraphHost {
  const store = new SqliteRunStore({ path: join(dir, file) });
  stores.push(store);
  const runtime = new GraphHost({
    graph: graphOf(pausing, slowMs),
    runtime: new InProcessRuntime(),
    queue: new RunQueue({ store, name: "w" }),
    sessionKey: "a secret of at least thirty-two characters!",
    runner: { leaseSeconds: 5, heartbeatSeconds: 1, concurrency: 30 },
  });
  runtimes.push(runtime);
  return runtime;
}

/** Waits (up to 10 s) until `cond` holds; the assertion after it says what did not. */
async function settle(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 20));
}

describe("RunWatcher", () => {
  it("keeps no entry for executions nobody listens to", async () => {
    const runtime = make(false, "quiet.db");
    await runtime.start();
    for (let i = 0; i < 25; i++) {
      const done = await runtime.triggerAndWait("default", {}, ExecContext.create(), {
        timeoutSeconds: 10,
      });
      expect(done.status).toBe("succeeded");
    }
    expect(runtime.getStats().watched).toBe(0);
  });

  it("forgets executions that paused and then ended, and still follows a resume once", async () => {
    const runtime = make(true, "paused.db");
    const seen: RunEvent[] = [];
    runtime.subscribe(null, (e) => void seen.push(e));
    await runtime.start();
    // Paused, then cancelled.
    for (let i = 0; i < 5; i++) {
      const paused = await runtime.triggerAndWait("default", {}, ExecContext.create(), {
        timeoutSeconds: 10,
      });
      expect(paused.status).toBe("paused");
      expect((await runtime.cancel(paused.runId)).status).toBe("cancelled");
    }
    // Paused, then resumed from its sessionState (the paused run is superseded, cancelled).
    for (let i = 0; i < 5; i++) {
      const paused = await runtime.triggerAndWait("default", {}, ExecContext.create(), {
        timeoutSeconds: 10,
      });
      const done = await runtime.wait(
        (await runtime.resume(paused.sessionState!, "yes", { ctx: ExecContext.create() })).runId,
        { timeoutSeconds: 10 },
      );
      expect(done.status).toBe("succeeded");
    }
    // Paused, then answered by its id: its events after the resume reach the bus once.
    const paused = await runtime.triggerAndWait("default", {}, ExecContext.create(), {
      timeoutSeconds: 10,
    });
    await runtime.resume(paused.runId, "yes");
    expect((await runtime.wait(paused.runId, { timeoutSeconds: 10 })).status).toBe("succeeded");
    await settle(() => runtime.getStats().watched === 0);
    expect(runtime.getStats().watched).toBe(0);
    const mine = seen.filter((e) => e.runId === paused.runId);
    const seqs = mine.map((e) => e.seq);
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(mine.map((e) => e.type)).toContain(RunEventType.PAUSED);
    expect(mine.map((e) => e.type)).toContain(RunEventType.RESUMED);
    expect(mine[mine.length - 1]?.type).toBe(RunEventType.SUCCEEDED);
  });

  it("follows many executions at once without Node's possible-leak warning on its stop signal", async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error): void => void warnings.push(`${w.name}: ${w.message}`);
    process.on("warning", onWarning);
    try {
      const runtime = make(false, "many.db", 300);
      runtime.subscribe(null, () => undefined);
      await runtime.start();
      const ids = await Promise.all(
        Array.from({ length: 30 }, () => runtime.trigger("default", {}, ExecContext.create())),
      );
      for (const id of ids) {
        expect((await runtime.wait(id, { timeoutSeconds: 10 })).status).toBe("succeeded");
      }
      await settle(() => runtime.getStats().watched === 0);
      await new Promise((r) => setImmediate(r));
      expect(warnings.filter((w) => w.startsWith("MaxListenersExceededWarning"))).toEqual([]);
    } finally {
      process.off("warning", onWarning);
    }
  });
});
