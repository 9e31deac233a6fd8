// GraphHost takes a runner's options once: `runner` is either the options of the Runner it
// builds per entry point (the Runner's own names and defaults) or an existing Runner. The runs'
// own options (retry, maxReclaims) come from the queue it is given. Real SQLite store.
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { ExecContext } from "../../context/exec-context.js";
import { ErrorCode, NervaError } from "../../errors.js";
import { RunQueue } from "../../runs/run-queue.js";
import { Runner } from "../../runs/runner.js";
import { SqliteRunStore } from "../../runs/sqlite/sqlite-run-store.js";
import { InProcessRuntime } from "../../runtime/in-process-runtime.js";
import { END, GraphHost, defineGraph, fnNode, type GraphHostOptions } from "../index.js";

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

const S = z.object({ tries: z.number().optional() });

function flaky(failures: number) {
  let calls = 0;
  return defineGraph({
    name: "flaky",
    state: S,
    nodes: {
      a: fnNode<z.output<typeof S>>(async () => {
        calls += 1;
        if (calls <= failures) throw new Error(`failure ${calls}`);
        return { tries: calls };
      }),
    },
    edges: [["a", END]],
    entry: "a",
  });
}

function host(options: Omit<GraphHostOptions, "runtime" | "queue"> & { queue?: RunQueue }) {
  const store = new SqliteRunStore({ path: ":memory:" });
  cleanup.push(() => store.close());
  const h = new GraphHost({
    runtime: new InProcessRuntime(),
    queue: new RunQueue({ store, name: "opts" }),
    ...options,
  });
  cleanup.push(() => h.stop({ graceSeconds: 0 }));
  return h;
}

describe("GraphHost runner options", () => {
  it("builds each entry point's Runner with the Runner's own default concurrency, or the one given", () => {
    const entryPoints = [
      { id: "default", trigger: { type: "manual" as const } },
      { id: "bulk", trigger: { type: "manual" as const }, concurrency: 5 },
    ];
    const plain = host({ graph: flaky(0), entryPoints });
    expect(plain.getEntryPoints().map((e) => [e.id, e.concurrency, e.queue])).toEqual([
      ["default", 1, "opts.default"],
      ["bulk", 5, "opts.bulk"],
    ]);
    const tuned = host({ graph: flaky(0), entryPoints, runner: { concurrency: 3 } });
    expect(tuned.getEntryPoints().map((e) => e.concurrency)).toEqual([3, 5]);
  });

  it("gives each entry point's runs the retry and maxReclaims of the queue it was given", async () => {
    const store = new SqliteRunStore({ path: ":memory:" });
    cleanup.push(() => store.close());
    const queue = new RunQueue({
      store,
      name: "q",
      retry: { maxAttempts: 3, initialDelaySeconds: 0, jitter: 0 },
      maxReclaims: 7,
    });
    const h = host({
      graph: flaky(2),
      queue,
      runner: { leaseSeconds: 2, heartbeatSeconds: 0.1 },
    });
    await h.start();
    const id = await h.trigger("default", {}, ExecContext.create());
    const done = await h.wait(id, { timeoutSeconds: 10 });
    expect(done).toMatchObject({ status: "succeeded", state: { tries: 3 } });
    const run = await store.get(id);
    expect(run).toMatchObject({ queue: "q.default", attempt: 3, maxReclaims: 7 });
    expect(run?.retry.maxAttempts).toBe(3);
  });

  it("refuses the runner's options beside `runner`, naming the key and the fix", () => {
    for (const key of ["concurrency", "leaseSeconds", "heartbeatSeconds", "retry", "maxReclaims"]) {
      const err = (() => {
        try {
          host({ graph: flaky(0), [key]: 1 } as never);
        } catch (e) {
          return e;
        }
        return null;
      })();
      expect(err).toBeInstanceOf(NervaError);
      expect((err as NervaError).code).toBe(ErrorCode.INVALID_OPTIONS);
      expect((err as NervaError).message).toContain(key);
      expect((err as NervaError).message).toMatch(/runner\?: a Runner or \{ concurrency\?/);
    }
    expect(() =>
      host({ graph: flaky(0), runner: { leaseSeconds: 1, heartbeatSeconds: 2 } }),
    ).toThrow(/options\.runner\.heartbeatSeconds: must be less than leaseSeconds/);
    expect(() => host({ graph: flaky(0), runner: { queue: {} } as never })).toThrow(
      /options\.runner/,
    );
  });

  it("with an existing Runner, builds no runner of its own and uses the Runner's queue", async () => {
    const store = new SqliteRunStore({ path: ":memory:" });
    cleanup.push(() => store.close());
    const queue = new RunQueue({ store, name: "shared" });
    const runtime = new InProcessRuntime();
    const runner = new Runner({ queue, runtime, leaseSeconds: 2, heartbeatSeconds: 0.1 });
    const h = host({ graph: flaky(0), queue, runtime, runner } as never);
    expect(h.getEntryPoints().map((e) => e.queue)).toEqual(["shared"]);
    await runner.start();
    cleanup.push(() => runner.stop({ graceSeconds: 0 }));
    const id = await h.trigger("default", {}, ExecContext.create());
    expect((await h.wait(id, { timeoutSeconds: 10 })).status).toBe("succeeded");
  });
});
