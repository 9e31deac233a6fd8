// A graph's node visits (their steps and their questions) are keyed where the keys a node's own
// code gives (`ctx.exec.run.step`, `ctx.exec.run.waitForInput`, `ctx.step`) cannot reach, so no
// user step takes a visit's committed place, nor a visit a user step's. Real stores: in-memory,
// SQLite and Redis.
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { ExecContext } from "../../context/exec-context.js";
import { RunQueue } from "../../runs/run-queue.js";
import type { RunStore } from "../../runs/store.js";
import { storeBackends } from "../../runs/store-backends.test-support.js";
import { InProcessRuntime } from "../../runtime/in-process-runtime.js";
import { rejection } from "../../testing/rejection.js";
import { END, GraphHost, defineGraph, fnNode, inputNode, type GraphNode } from "../index.js";

const open: { store: RunStore; runtime: GraphHost }[] = [];
afterEach(async () => {
  for (const { store, runtime } of open.splice(0)) {
    await runtime.stop({ graceSeconds: 0 });
    await store.close();
  }
});

const backends = storeBackends("visit-keys");

const S = z.object({ laps: z.number().optional(), note: z.string().optional() });
type S = z.output<typeof S>;

async function start(make: () => RunStore, nodes: Record<string, GraphNode<S>>, entry: string) {
  const store = make();
  const graph = defineGraph({
    name: "keys",
    state: S,
    nodes,
    edges: [
      ["mine", "loop"],
      ["loop", (s) => ((s.laps ?? 0) < 2 ? "loop" : END), ["loop", END]],
    ],
    entry,
  });
  const runtime = new GraphHost({
    graph,
    runtime: new InProcessRuntime(),
    queue: new RunQueue({ store, name: "visits" }),
    runner: { leaseSeconds: 5, heartbeatSeconds: 1 },
  });
  open.push({ store, runtime });
  await runtime.start();
  return runtime;
}

describe.each(backends)("node visit keys on %s", (_name, make) => {
  it("a node's own steps named after another node never stand in for its visits", async () => {
    const bodies: string[] = [];
    const runtime = await start(
      make,
      {
        // Two run steps named "loop" (the second one is loop#2), then the second visit of "loop".
        mine: fnNode<S>(async (_s, ctx) => {
          await ctx.exec.run!.step("loop", () => (bodies.push("mine 1"), "x"));
          await ctx.exec.run!.step("loop", () => (bodies.push("mine 2"), "y"));
          return {};
        }),
        loop: fnNode<S>(
          (s) => (bodies.push(`loop ${(s.laps ?? 0) + 1}`), { laps: (s.laps ?? 0) + 1 }),
        ),
      },
      "mine",
    );
    const done = await runtime.triggerAndWait("default", {}, ExecContext.create(), {
      timeoutSeconds: 20,
    });
    expect(done.error).toBeNull();
    expect(done.status).toBe("succeeded");
    expect(done.state).toEqual({ laps: 2 });
    expect(done.path).toEqual(["mine#1", "loop#1", "loop#2"]);
    expect(bodies).toEqual(["mine 1", "mine 2", "loop 1", "loop 2"]);
  });

  it("a node's own question named after another node does not take that node's answer", async () => {
    const runtime = await start(
      make,
      {
        // Asks "loop" twice through the run (the second is loop#2); "loop" then asks on its visits.
        mine: fnNode<S>(async (_s, ctx) => {
          const a = await ctx.exec.run!.waitForInput<string>("loop");
          const b = await ctx.exec.run!.waitForInput<number>("loop");
          return { note: `${a}${b}` };
        }),
        loop: inputNode<S>({ prompt: "lap?", writes: "laps", schema: z.number() }),
      },
      "mine",
    );
    const ctx = ExecContext.create();
    const first = await runtime.triggerAndWait("default", {}, ctx, { timeoutSeconds: 20 });
    expect(first.status).toBe("paused");
    // The two questions of "mine" are answered through the run's own resume (not node inputs).
    const store = open[open.length - 1]!.store;
    const runs = new RunQueue({ store, name: "visits" });
    await runs.resume(first.runId, "a", { key: "loop" });
    await runtime.wait(first.runId, { timeoutSeconds: 20 });
    await runs.resume(first.runId, 5, { key: "loop#2" });
    const atLoop = await runtime.wait(first.runId, { timeoutSeconds: 20 });
    expect(atLoop.pausedAt).toBe("loop");
    await runtime.resume(first.runId, 1);
    // The second visit of "loop" asks again: it was not answered by "mine"'s loop#2 (5).
    const again = await runtime.wait(first.runId, { timeoutSeconds: 20 });
    expect(again.status).toBe("paused");
    expect(again.pausedAt).toBe("loop");
    await runtime.resume(first.runId, 2);
    const done = await runtime.wait(first.runId, { timeoutSeconds: 20 });
    expect(done.status).toBe("succeeded");
    expect(done.state).toEqual({ note: "a5", laps: 2 });
  });

  it("refuses ctx.step keys with # (INVALID_INPUT naming the key)", async () => {
    let refused: unknown = null;
    const runtime = await start(
      make,
      {
        mine: fnNode<S>(async (_s, ctx) => {
          refused = await rejection(ctx.step("x#2", () => 1));
          return {};
        }),
        loop: fnNode<S>(() => ({ laps: 2 })),
      },
      "mine",
    );
    const done = await runtime.triggerAndWait("default", {}, ExecContext.create(), {
      timeoutSeconds: 20,
    });
    expect(done.status).toBe("succeeded");
    expect(refused).toMatchObject({ code: "INVALID_INPUT" });
    expect((refused as Error).message).toContain('"x#2"');
  });
});
