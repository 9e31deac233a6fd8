// Every check that can refuse a trigger or a resume runs before anything is written: a refused
// sessionState resume leaves the paused execution paused, for its owner to resume. And the
// trigger boundary refuses what it cannot use (idempotency keys, raw bodies) with INVALID_INPUT
// naming the field. Real in-memory, SQLite and Redis stores.
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { ExecContext } from "../../context/exec-context.js";
import { RunQueue } from "../../runs/run-queue.js";
import type { RunStore } from "../../runs/store.js";
import { storeBackends } from "../../runs/store-backends.test-support.js";
import { InProcessRuntime } from "../../runtime/in-process-runtime.js";
import { rejection } from "../../testing/rejection.js";
import { END, GraphHost, defineGraph, fnNode, inputNode, type EntryPointSpec } from "../index.js";

const open: { store: RunStore; runtime: GraphHost }[] = [];
afterEach(async () => {
  for (const { store, runtime } of open.splice(0)) {
    await runtime.stop({ graceSeconds: 0 });
    await store.close();
  }
});

const backends = storeBackends("refusals");

const S = z.object({ ok: z.string().optional(), who: z.string().optional() });
type S = z.output<typeof S>;
const wait = { timeoutSeconds: 20 };
const owner = () => ExecContext.create({ userId: "owner" });

function make(
  store: () => RunStore,
  effects: string[],
  entryPoints?: EntryPointSpec[],
  maxStepBytes?: number,
) {
  const s = store();
  const graph = defineGraph({
    name: "approve",
    state: S,
    nodes: {
      ask: inputNode<S>({ prompt: "ok?", writes: "ok", schema: z.string() }),
      act: fnNode<S>((state) => (effects.push(state.ok ?? ""), {})),
    },
    edges: [
      ["ask", "act"],
      ["act", END],
    ],
    entry: "ask",
  });
  const runtime = new GraphHost({
    graph,
    runtime: new InProcessRuntime(),
    queue: new RunQueue({
      store: s,
      name: "r",
      ...(maxStepBytes === undefined ? {} : { maxStepBytes }),
    }),
    sessionKey: "a secret of at least thirty-two characters!",
    ...(entryPoints === undefined ? {} : { entryPoints }),
    runner: { leaseSeconds: 5, heartbeatSeconds: 1 },
  });
  open.push({ store: s, runtime });
  return runtime;
}

describe.each(backends)("refused sessionState resumes on %s", (_name, store) => {
  it("a caller who may not use the graph is refused PERMISSION_DENIED, and the owner's resume still works", async () => {
    const effects: string[] = [];
    const runtime = make(store, effects);
    await runtime.start();
    const paused = await runtime.triggerAndWait("default", {}, owner(), wait);
    expect(paused.status).toBe("paused");
    const stranger = ExecContext.create({ userId: "x", permissions: { allowedAgents: [] } });
    const err = await rejection(runtime.resume(paused.sessionState!, "stolen", { ctx: stranger }));
    expect(err.code).toBe("PERMISSION_DENIED");
    expect(err.message).toMatch(/graph "approve"/);
    expect((await runtime.get(paused.runId))?.status).toBe("paused");
    const done = await runtime.wait(
      (await runtime.resume(paused.sessionState!, "mine", { ctx: owner() })).runId,
      wait,
    );
    expect(done.status).toBe("succeeded");
    expect(effects).toEqual(["mine"]);
  });

  it("an answer that does not fit the paused node's schema is refused before the execution is ended", async () => {
    const effects: string[] = [];
    const runtime = make(store, effects);
    await runtime.start();
    const paused = await runtime.triggerAndWait("default", {}, owner(), wait);
    const err = await rejection(runtime.resume(paused.sessionState!, 42, { ctx: owner() }));
    expect(err.code).toBe("INVALID_INPUT");
    expect(err.issues[0]?.path).toBe("answer");
    expect((await runtime.get(paused.runId))?.status).toBe("paused");
    const done = await runtime.wait(
      (await runtime.resume(paused.sessionState!, "yes", { ctx: owner() })).runId,
      wait,
    );
    expect(done.status).toBe("succeeded");
  });

  it("a resume refused RATE_LIMITED (backlog full) leaves the execution paused", async () => {
    const effects: string[] = [];
    const runtime = make(store, effects, [{ id: "default", backlog: 1 }]);
    await runtime.start();
    const paused = await runtime.triggerAndWait("default", {}, owner(), wait);
    await runtime.stop({ graceSeconds: 0 });
    // Nobody runs executions now: one fresh one waits to start and fills the backlog.
    const waiting = await runtime.trigger("default", {}, owner());
    const err = await rejection(runtime.resume(paused.sessionState!, "yes", { ctx: owner() }));
    expect(err.code).toBe("RATE_LIMITED");
    expect((await runtime.get(paused.runId))?.status).toBe("paused");
    await runtime.start();
    expect((await runtime.wait(waiting, wait)).status).toBe("paused");
    const done = await runtime.wait(
      (await runtime.resume(paused.sessionState!, "yes", { ctx: owner() })).runId,
      wait,
    );
    expect(done.status).toBe("succeeded");
    expect(effects).toEqual(["yes"]);
  });

  it("a resume whose state is too large for the run's input is refused before the execution is ended", async () => {
    const runtime = make(store, [], undefined, 4000);
    await runtime.start();
    const paused = await runtime.triggerAndWait("default", {}, owner(), wait);
    // Its state fits in 4000 bytes of JSON, but not once quoted again inside the run's input.
    const who = '"'.repeat(1500);
    const err = await rejection(
      runtime.resume(paused.sessionState!, "yes", { ctx: owner(), state: { who } }),
    );
    expect(err.code).toBe("INVALID_INPUT");
    expect((await runtime.get(paused.runId))?.status).toBe("paused");
    const done = await runtime.wait(
      (await runtime.resume(paused.sessionState!, "yes", { ctx: owner() })).runId,
      wait,
    );
    expect(done.status).toBe("succeeded");
  });

  it("refuses idempotency keys it cannot use, and raw or non-plain bodies, enqueuing nothing", async () => {
    const runtime = make(
      store,
      [],
      [{ id: "default" }, { id: "hook", trigger: { type: "webhook", path: "/hooks/approve" } }],
    );
    const queue = new RunQueue({ store: open[open.length - 1]!.store, name: "r" });
    const before = (await queue.list()).runs.length;
    for (const key of ["", 42, "$timer:1700000000000", "x".repeat(201)]) {
      const err = await rejection(
        runtime.trigger("default", {}, owner(), { idempotencyKey: key as string }),
      );
      expect(err.code).toBe("INVALID_INPUT");
      expect(err.issues[0]?.path).toBe("options.idempotencyKey");
    }
    const raw = Buffer.from(JSON.stringify({ ok: "lost" }));
    const buffer = await rejection(runtime.handleWebhook("/hooks/approve", raw, owner()));
    expect(buffer.code).toBe("INVALID_INPUT");
    expect(buffer.message).toMatch(/Invalid body: got a Buffer/);
    const map = await rejection(
      runtime.handleWebhook("/hooks/approve", new Map([["ok", "lost"]]), owner()),
    );
    expect(map.message).toMatch(/Invalid body: got a Map/);
    const input = await rejection(runtime.trigger("default", new Map() as never, owner()));
    expect(input.issues[0]?.path).toBe("input");
    expect((await queue.list()).runs.length).toBe(before);
    // A parsed body is the start state.
    const id = await runtime.handleWebhook("/hooks/approve", { who: "hook" }, owner());
    expect((await runtime.get(id))?.state).toMatchObject({ who: "hook" });
  });
});
