// A graph node that throws an UnrecoverableError fails the graph's run at once, with attempts left,
// and so does an agent node whose handler threw one; any other error a node throws is retried by
// the run's retry policy. Real in-memory, SQLite and Redis stores.
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { ExecContext } from "../../context/exec-context.js";
import { UnrecoverableError } from "../../errors.js";
import { RunQueue } from "../../runs/run-queue.js";
import type { RunStore } from "../../runs/store.js";
import { storeBackends } from "../../runs/store-backends.test-support.js";
import { InProcessRuntime } from "../../runtime/in-process-runtime.js";
import { END, GraphHost, agentNode, defineGraph, fnNode } from "../index.js";

const open: { store: RunStore; runtime: GraphHost }[] = [];
afterEach(async () => {
  for (const { store, runtime } of open.splice(0)) {
    await runtime.stop({ graceSeconds: 0 });
    await store.close();
  }
});

const backends = storeBackends("graph-unrecoverable");
const S = z.object({ n: z.number().default(0) });
type S = z.output<typeof S>;

/** A graph `first → fails → END` whose second node throws `thrown()` (or whose agent does). */
async function execute(make: () => RunStore, how: "node" | "agent", thrown: () => Error) {
  let calls = 0;
  const store = make();
  const agents = new InProcessRuntime().register("charge_agent", () => {
    calls++;
    throw thrown();
  });
  const fails =
    how === "agent"
      ? agentNode<S>("charge_agent", { output: () => ({}) })
      : fnNode<S>(() => {
          calls++;
          throw thrown();
        });
  const graph = defineGraph({
    name: "charge",
    state: S,
    nodes: { first: fnNode<S>((s) => ({ n: s.n + 1 })), fails },
    edges: [
      ["first", "fails"],
      ["fails", END],
    ],
    entry: "first",
  });
  const runtime = new GraphHost({
    graph,
    runtime: agents,
    queue: new RunQueue({
      store,
      name: "g",
      retry: { maxAttempts: 3, initialDelaySeconds: 0.01, jitter: 0 },
    }),
    runner: { leaseSeconds: 5, heartbeatSeconds: 1 },
  });
  open.push({ store, runtime });
  await runtime.start();
  const done = await runtime.triggerAndWait("default", {}, ExecContext.create(), {
    timeoutSeconds: 20,
  });
  return { done, calls };
}

describe.each(backends)("UnrecoverableError in a graph on %s", (_name, make) => {
  it("a node that throws it fails the run without a retry", async () => {
    const { done, calls } = await execute(make, "node", () => new UnrecoverableError("declined"));
    expect(done).toMatchObject({
      status: "failed",
      error: { code: "UNRECOVERABLE", message: expect.stringMatching(/Node "fails" failed/) },
    });
    expect(calls).toBe(1);
  });

  it("an agent node whose handler throws it fails the run without a retry", async () => {
    const { done, calls } = await execute(make, "agent", () => new UnrecoverableError("declined"));
    expect(done).toMatchObject({ status: "failed", error: { code: "NODE_FAILED" } });
    expect(calls).toBe(1);
  });

  it("any other error, a `retriable: false` flag on it included, is retried", async () => {
    const flagged = () => Object.assign(new Error("reset"), { retriable: false });
    const { done, calls } = await execute(make, "node", flagged);
    expect(done).toMatchObject({ status: "failed", error: { code: "NODE_FAILED" } });
    expect(calls).toBe(3);
  });
});
