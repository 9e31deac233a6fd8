// A cancel or a deadline reaches a running node at once, on every store: heartbeats here are a
// minute apart, so an abort that waited for one would come after the test's timeout.
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { RunQueue } from "../../runs/run-queue.js";
import { storeBackends } from "../../runs/store-backends.test-support.js";
import { InProcessRuntime } from "../../runtime/in-process-runtime.js";
import { END, GraphHost, defineGraph, fnNode } from "../index.js";

const runtimes: GraphHost[] = [];
afterEach(async () => {
  for (const r of runtimes.splice(0)) await r.stop({ graceSeconds: 0 });
});

const stores = storeBackends("graph-cancel");

/** A one-node graph whose node waits for its signal; `why` says why it aborted. */
function waitingGraph() {
  let started!: () => void;
  const began = new Promise<void>((r) => (started = r));
  let seen!: (why: string) => void;
  const why = new Promise<string>((r) => (seen = r));
  const graph = defineGraph({
    name: "waits",
    state: z.object({ done: z.boolean().optional() }),
    nodes: {
      wait: fnNode(async (_s, ctx) => {
        started();
        await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve()));
        seen(String((ctx.signal.reason as { code?: unknown } | undefined)?.code));
        return { done: true };
      }),
    },
    edges: [["wait", END]],
    entry: "wait",
  });
  return { graph, began, why };
}

describe.each(stores)("graph cancel and deadline on %s", (_label, open) => {
  function host(graph: ReturnType<typeof waitingGraph>["graph"], executionTimeoutSeconds = 600) {
    // Heartbeats a minute apart: only the cancel itself (or the deadline) can abort the node.
    const store = open();
    const runtime = new GraphHost({
      graph,
      runtime: new InProcessRuntime({ timeoutSeconds: 600 }),
      queue: new RunQueue({ store, name: "t", retry: { maxAttempts: 1 } }),
      executionTimeoutSeconds,
      runner: { leaseSeconds: 120, heartbeatSeconds: 60 },
    });
    runtimes.push(runtime);
    return runtime;
  }

  it("GraphHost.cancel aborts the running node's signal at once", async () => {
    const { graph, began, why } = waitingGraph();
    const runtime = host(graph);
    await runtime.start();
    const id = await runtime.trigger("default", {});
    await began;
    await runtime.cancel(id, { reason: "pressed stop" });
    expect((await runtime.wait(id, { timeoutSeconds: 15 })).status).toBe("cancelled");
    expect(await why).toBe("CANCELLED");
  });

  it("the execution's deadline aborts the running node's signal when it passes", async () => {
    const { graph, began, why } = waitingGraph();
    const runtime = host(graph, 0.3);
    await runtime.start();
    const id = await runtime.trigger("default", {});
    await began;
    expect((await runtime.wait(id, { timeoutSeconds: 15 })).status).toBe("timed_out");
    expect(await why).toBe("TIMEOUT");
  });
});
