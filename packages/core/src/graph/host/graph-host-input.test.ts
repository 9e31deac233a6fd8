// GraphHost at its public boundary: options that are not objects (null from JavaScript
// callers) and event type lists that are not lists get a typed error naming them, not a
// TypeError. Real SQLite store.
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { ExecContext } from "../../context/exec-context.js";
import { RunQueue } from "../../runs/run-queue.js";
import { SqliteRunStore } from "../../runs/sqlite/sqlite-run-store.js";
import { InProcessRuntime } from "../../runtime/in-process-runtime.js";
import { END, GraphHost, defineGraph, fnNode } from "../index.js";
import { rejection } from "../../testing/rejection.js";

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

describe("GraphHost input", () => {
  it("refuses options that are not objects and event types that are not a list", async () => {
    const store = new SqliteRunStore({ path: ":memory:" });
    cleanup.push(() => store.close());
    const S = z.object({ n: z.number().optional() });
    const graph = defineGraph({
      name: "g",
      state: S,
      nodes: { a: fnNode<z.output<typeof S>>(async () => ({ n: 1 })) },
      edges: [["a", END]],
      entry: "a",
    });
    const runtime: GraphHost = new GraphHost({
      graph,
      runtime: new InProcessRuntime(),
      queue: new RunQueue({ store, name: "in" }),
      runner: { leaseSeconds: 5, heartbeatSeconds: 1 },
    });
    cleanup.push(() => runtime.stop({ graceSeconds: 0 }));
    await runtime.start();
    const id = await runtime.trigger("default", {}, ExecContext.create());
    expect((await runtime.wait(id, { timeoutSeconds: 10 })).status).toBe("succeeded");
    const n = null as never;
    const drain = async (it: AsyncIterable<unknown>): Promise<void> => {
      for await (const _ of it) break;
    };
    for (const [label, fn] of [
      ["trigger", () => runtime.trigger("default", {}, ExecContext.create(), n)],
      ["cancel", () => runtime.cancel(id, n)],
      ["events", () => drain(runtime.events(id, n))],
      ["events types", () => drain(runtime.events(id, { types: 5 as never }))],
      ["subscribe", () => runtime.subscribe(null, () => undefined, n)],
      ["stop", () => runtime.stop(n)],
    ] as const) {
      const err = await rejection((async () => fn())());
      expect(err.code, label).toBe("INVALID_INPUT");
      expect(err.message, label).toMatch(/options/);
    }
    expect(runtime.isRunning).toBe(true);
    expect(runtime.getStats().subscribers).toBe(0);
  });
});
