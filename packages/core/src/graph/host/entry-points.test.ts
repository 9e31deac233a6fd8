import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { ExecContext } from "../../context/exec-context.js";
import { NervaError } from "../../errors.js";
import { InMemoryRunStore } from "../../runs/memory/in-memory-store.js";
import { RunQueue } from "../../runs/run-queue.js";
import { InProcessRuntime } from "../../runtime/in-process-runtime.js";
import {
  END,
  IsolationLevel,
  GraphHost,
  defineGraph,
  fnNode,
  type GraphHostOptions,
} from "../index.js";
import { RunEventType, type RunEvent } from "../../runs/types.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const runtimes: GraphHost[] = [];
afterEach(async () => {
  for (const r of runtimes.splice(0)) await r.stop({ graceSeconds: 0 });
});

const S = z.object({
  who: z.string().default("?"),
  seen: z.number().optional(),
  slot: z.number().optional(),
});
type St = z.output<typeof S>;

function make(options: Partial<GraphHostOptions> & Pick<GraphHostOptions, "graph">) {
  const r = new GraphHost({
    runtime: new InProcessRuntime(),
    queue: new RunQueue({ store: new InMemoryRunStore(), name: "ep" }),
    runner: { leaseSeconds: 2, heartbeatSeconds: 0.1 },
    ...options,
  });
  runtimes.push(r);
  return r;
}

/** A graph whose one node blocks until `release()` and counts how many run at once. */
function gate() {
  let open!: () => void;
  let opened = new Promise<void>((r) => (open = r));
  const live = { now: 0, max: 0 };
  const graph = defineGraph({
    name: "gate",
    state: S,
    nodes: {
      work: fnNode<St>(async () => {
        live.now += 1;
        live.max = Math.max(live.max, live.now);
        await opened;
        live.now -= 1;
        return {};
      }),
    },
    edges: [["work", END]],
    entry: "work",
  });
  return {
    graph,
    live,
    release: () => {
      open();
      opened = new Promise<void>((r) => (open = r));
    },
  };
}

describe("entry points", () => {
  it("have their own concurrency and backlog: over the backlog a trigger is RATE_LIMITED", async () => {
    const { graph, live, release } = gate();
    const runtime = make({
      graph,
      entryPoints: [
        { id: "narrow", concurrency: 1, backlog: 2 },
        { id: "wide", concurrency: 3 },
      ],
    });
    await runtime.start();
    const ctx = ExecContext.create();
    const first = await runtime.trigger("narrow", {}, ctx);
    await runtime.wait(first, { timeoutSeconds: 0.2 }).catch(() => undefined); // let it start
    const waiting = [
      await runtime.trigger("narrow", {}, ctx),
      await runtime.trigger("narrow", {}, ctx),
    ];
    let limited: NervaError | null = null;
    try {
      await runtime.trigger("narrow", {}, ctx);
    } catch (err) {
      limited = err as NervaError;
    }
    expect(limited?.code).toBe("RATE_LIMITED");
    expect(limited?.message).toMatch(/"narrow" has 2 runs waiting/);
    expect(limited?.details.retryAfterSeconds).toBe(1);
    // Another entry point is not held up by the narrow one's backlog.
    const wide = await Promise.all([1, 2, 3].map(() => runtime.trigger("wide", {}, ctx)));
    await sleep(150);
    expect(live.now).toBe(4); // 1 narrow + 3 wide
    expect(runtime.getStats().entryPoints).toMatchObject({
      narrow: { triggered: 3, rateLimited: 1, active: 1 },
      wide: { active: 3 },
    });
    for (let i = 0; i < 6; i++) {
      release();
      await sleep(30);
    }
    for (const id of [first, ...waiting, ...wide]) {
      expect((await runtime.wait(id, { timeoutSeconds: 10 })).status).toBe("succeeded");
    }
    expect(live.max).toBeLessThanOrEqual(4);
    expect(runtime.getEntryPoints().map((e) => [e.id, e.concurrency, e.backlog, e.queue])).toEqual([
      ["narrow", 1, 2, "ep.narrow"],
      ["wide", 3, 100, "ep.wide"],
    ]);
  });

  it(
    "fire a timer once per slot across two runtimes sharing the store",
    { timeout: 20_000 },
    async () => {
      const store = new InMemoryRunStore();
      const graph = defineGraph({
        name: "tick",
        state: S,
        nodes: { tick: fnNode<St>(() => ({})) },
        edges: [["tick", END]],
        entry: "tick",
      });
      const options = {
        graph,
        entryPoints: [
          {
            id: "every",
            trigger: { type: "timer" as const, intervalSeconds: 1 },
            input: (src: { type: string; slot?: number }) => ({ slot: src.slot }),
          },
        ],
      };
      const a = make({ ...options, queue: new RunQueue({ store, name: "tick" }) });
      const b = make({ ...options, queue: new RunQueue({ store, name: "tick" }) });
      await a.start();
      await b.start();
      await sleep(3_300);
      await a.stop();
      await b.stop();
      const runs = (await new RunQueue({ store, name: "tick.every" }).list({ limit: 100 })).runs;
      const slots = runs.map(
        (r) => (JSON.parse(r.input.message) as { state: { slot: number } }).state.slot,
      );
      expect(slots.length).toBeGreaterThanOrEqual(3);
      expect(new Set(slots).size).toBe(slots.length);
      for (const s of slots) expect(s % 1000).toBe(0);
    },
  );

  it("trigger on events of other executions, with a guard against triggering themselves", async () => {
    const graph = defineGraph({
      name: "chain",
      state: S,
      nodes: { step: fnNode<St>((s) => ({ who: `${s.who}+` })) },
      edges: [["step", END]],
      entry: "step",
    });
    const runtime = make({
      graph,
      entryPoints: [
        { id: "main" },
        // Fires for every completed execution, its own included: the guard must stop the loop.
        {
          id: "audit",
          trigger: { type: "event", events: [RunEventType.SUCCEEDED] },
          input: (src) => ({
            who: `audit of ${src.type === "event" ? src.entryPoint : "?"}`,
          }),
        },
        {
          id: "follow",
          trigger: { type: "event", events: [RunEventType.SUCCEEDED], from: ["audit"] },
        },
      ],
    });
    const completed: string[] = [];
    runtime.subscribe([RunEventType.SUCCEEDED], (_e, info) => void completed.push(info.entryPoint));
    await runtime.start();
    await runtime.triggerAndWait("main", { who: "m" }, ExecContext.create(), {
      timeoutSeconds: 10,
    });
    await sleep(600);
    const byEntry = [...completed].sort();
    // main → audit (of main) → follow (of audit); audit does not audit itself, follow does not follow
    // itself, and audit does not fire for follow, whose chain already holds audit.
    expect(byEntry).toEqual(["audit", "follow", "main"]);
  });

  it("routes a webhook path to its entry point and lists entry points", async () => {
    const graph = defineGraph({
      name: "hook",
      state: S,
      nodes: { h: fnNode<St>((s) => ({ who: `hook:${s.who}` })) },
      edges: [["h", END]],
      entry: "h",
    });
    const runtime = make({
      graph,
      entryPoints: [{ id: "webhook", trigger: { type: "webhook", path: "/hooks/refund" } }],
    });
    expect(runtime.isRunning).toBe(false);
    await runtime.start();
    expect(runtime.isRunning).toBe(true);
    const id = await runtime.handleWebhook(
      "/hooks/refund",
      { who: "stripe" },
      ExecContext.create(),
    );
    expect((await runtime.wait(id, { timeoutSeconds: 10 })).state.who).toBe("hook:stripe");
    await expect(runtime.handleWebhook("/nope", {}, ExecContext.create())).rejects.toThrow(
      /No webhook entry point has path "\/nope"/,
    );
    await runtime.stop();
    expect(runtime.isRunning).toBe(false);
  });
});

describe("event bus", () => {
  it("bounds a slow subscriber's buffer, tells it how many it missed, and never blocks executions", async () => {
    const graph = defineGraph({
      name: "chatty",
      state: S,
      nodes: {
        talk: fnNode<St>(async (_s, ctx) => {
          for (let i = 0; i < 60; i++) await ctx.emit(`c${i} `);
          return {};
        }),
      },
      edges: [["talk", END]],
      entry: "talk",
    });
    const runtime = make({ graph });
    let release!: () => void;
    const stuck = new Promise<void>((r) => (release = r));
    const slow: { seq: number; missed: number }[] = [];
    const sub = runtime.subscribe(
      [RunEventType.OUTPUT_DELTA],
      async (e, info) => {
        slow.push({ seq: e.seq, missed: info.missed });
        await stuck;
      },
      { bufferSize: 5 },
    );
    const fast: number[] = [];
    runtime.subscribe([RunEventType.OUTPUT_DELTA], (e) => void fast.push(e.seq));
    await runtime.start();
    const done = await runtime.triggerAndWait("default", {}, ExecContext.create(), {
      timeoutSeconds: 10,
    });
    expect(done.status).toBe("succeeded"); // the stuck subscriber held nothing up
    await sleep(50);
    expect(fast).toHaveLength(60);
    const missed = runtime.missedEvents(sub) as number;
    expect(missed).toBe(60 - 1 - 5); // one in the handler, five buffered, the rest dropped
    release();
    await sleep(50);
    expect(slow).toHaveLength(6);
    expect(slow.every((d) => d.missed === 0)).toBe(true);
    // After the gap, the next event it gets says how many it missed.
    const id = await runtime.trigger("default", {});
    await runtime.wait(id, { timeoutSeconds: 10 });
    await sleep(50);
    expect(slow[6]?.missed).toBe(missed);
    expect(runtime.unsubscribe(sub)).toBe(true);
    expect(runtime.unsubscribe(sub)).toBe(false);
  });

  it("filters by type, entry point and execution", async () => {
    const graph = defineGraph({
      name: "f",
      state: S,
      nodes: { a: fnNode<St>(() => ({})) },
      edges: [["a", END]],
      entry: "a",
    });
    const runtime = make({ graph, entryPoints: [{ id: "x" }, { id: "y" }] });
    const onlyY: RunEvent[] = [];
    runtime.subscribe([RunEventType.NODE_COMPLETED], (e) => void onlyY.push(e), {
      entryPoint: "y",
    });
    await runtime.start();
    const idX = await runtime.trigger("x", {});
    const idY = await runtime.trigger("y", {});
    const oneExec: RunEvent[] = [];
    runtime.subscribe(null, (e) => void oneExec.push(e), { runId: idX });
    await runtime.wait(idX, { timeoutSeconds: 10 });
    await runtime.wait(idY, { timeoutSeconds: 10 });
    await sleep(50);
    expect(onlyY.map((e) => [e.type, e.runId])).toEqual([[RunEventType.NODE_COMPLETED, idY]]);
    expect(oneExec.every((e) => e.runId === idX)).toBe(true);
    expect(() => runtime.subscribe(["", 7 as never], () => undefined)).toThrow(
      /Invalid event types \["",7\]/,
    );
  });
});

describe("shared state isolation", () => {
  async function counter(isolation: "isolated" | "shared" | "synchronized") {
    const graph = defineGraph({
      name: `count_${isolation}`,
      state: z.object({ before: z.number().optional(), after: z.number().optional() }),
      nodes: {
        bump: fnNode(async (_s, ctx) => {
          const before = (await ctx.shared.get<number>("count")) ?? 0;
          const after = await ctx.shared.update<number>("count", async (n) => {
            const read = n ?? 0;
            await sleep(10); // a read-modify-write that yields in the middle
            return read + 1;
          });
          return { before, after };
        }),
      },
      edges: [["bump", END]],
      entry: "bump",
    });
    const runtime = make({
      graph,
      runner: { leaseSeconds: 2, heartbeatSeconds: 0.1, concurrency: 8 },
      sharedState: { isolation, initial: { count: 0 } },
    });
    await runtime.start();
    const ids = await Promise.all(Array.from({ length: 8 }, () => runtime.trigger("default", {})));
    const results = await Promise.all(ids.map((id) => runtime.wait(id, { timeoutSeconds: 10 })));
    return { results, shared: await runtime.sharedState.snapshot() };
  }

  it("isolated: each execution sees only its own writes", async () => {
    const { results, shared } = await counter(IsolationLevel.ISOLATED);
    expect(results.map((r) => r.state.after)).toEqual(Array(8).fill(1));
    expect(shared.count).toBe(0);
  });

  it("shared: writes are seen at once by other executions, concurrent updates may be lost", async () => {
    const { results, shared } = await counter(IsolationLevel.SHARED);
    expect(results.every((r) => r.status === "succeeded")).toBe(true);
    expect(shared.count as number).toBeLessThan(8); // interleaved read-modify-writes
    expect(shared.count as number).toBeGreaterThanOrEqual(1);
  });

  it("synchronized: updates of a key run one at a time, none is lost", async () => {
    const { results, shared } = await counter(IsolationLevel.SYNCHRONIZED);
    expect(shared.count).toBe(8);
    expect(results.map((r) => r.state.after).sort()).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });
});
