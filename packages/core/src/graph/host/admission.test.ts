// A paused run is answered once: by a resume by its id or by one resume from its sessionState
// (retries of that resume with the same input included), never by both, never by two resumes
// with different inputs, even when they race. Real SQLite and Redis stores.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { ExecContext } from "../../context/exec-context.js";
import { NervaError } from "../../errors.js";
import { RunQueue } from "../../runs/run-queue.js";
import type { RunStore } from "../../runs/store.js";
import { SqliteRunStore } from "../../runs/sqlite/sqlite-run-store.js";
import { RedisRunStore } from "../../runs/redis/redis-run-store.js";
import { REDIS_URL, dropPrefixes, testPrefix } from "../../runs/redis/redis.test-support.js";
import { InProcessRuntime } from "../../runtime/in-process-runtime.js";
import { rejection } from "../../testing/rejection.js";
import { END, GraphHost, defineGraph, fnNode, inputNode } from "../index.js";

const dir = mkdtempSync(join(tmpdir(), "nerva-admission-"));
const prefixes: string[] = [];
const stores: RunStore[] = [];
const runtimes: GraphHost[] = [];
afterEach(async () => {
  for (const r of runtimes.splice(0)) await r.stop({ graceSeconds: 0 });
  for (const s of stores.splice(0)) await s.close();
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await dropPrefixes(prefixes);
});

const S = z.object({ ok: z.string().optional(), done: z.array(z.string()).optional() });
type S = z.output<typeof S>;

const backends: [string, (label: string) => RunStore][] = [
  ["sqlite", (label) => new SqliteRunStore({ path: join(dir, `${label}.db`) })],
  [
    "redis",
    (label) => {
      const prefix = testPrefix(`admission-${label}`);
      prefixes.push(prefix);
      return new RedisRunStore({ url: REDIS_URL, prefix });
    },
  ],
];

describe.each(backends)("sessionState resumes on %s", (_name, open) => {
  function make(label: string, effects: string[]): GraphHost {
    const store = open(label);
    stores.push(store);
    const graph = defineGraph({
      name: "approve",
      state: S,
      nodes: {
        ask: inputNode<S>({ prompt: "ok?", writes: "ok", schema: z.string() }),
        act: fnNode<S>(async (s) => {
          effects.push(s.ok ?? "");
          return { done: [s.ok ?? ""] };
        }),
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
      queue: new RunQueue({ store, name: "a" }),
      sessionKey: "a secret of at least thirty-two characters!",
      runner: { leaseSeconds: 5, heartbeatSeconds: 1, concurrency: 4 },
    });
    runtimes.push(runtime);
    return runtime;
  }
  const ctx = () => ExecContext.create();
  const wait = { timeoutSeconds: 10 };

  it("answers a paused execution once: a second resume with another input is refused, a retry with the same input is the same execution", async () => {
    const effects: string[] = [];
    const runtime = make("twice", effects);
    await runtime.start();
    const paused = await runtime.triggerAndWait("default", {}, ctx(), wait);
    expect(paused.status).toBe("paused");
    const session = paused.sessionState!;
    const first = await runtime.resume(session, "yes", { ctx: ctx() });
    const done = await runtime.wait(first.runId, wait);
    expect(done.status).toBe("succeeded");
    const again = await runtime.resume(session, "yes", { ctx: ctx() });
    expect(again.runId).toBe(done.runId);
    expect((await rejection(runtime.resume(session, "no", { ctx: ctx() }))).code).toBe(
      "INVALID_STATE",
    );
    expect(effects).toEqual(["yes"]);
  });

  it("refuses a sessionState resume after a resume by id answered the run, and leaves that answer running", async () => {
    const effects: string[] = [];
    const runtime = make("inject", effects);
    await runtime.start();
    const paused = await runtime.triggerAndWait("default", {}, ctx(), wait);
    await runtime.resume(paused.runId, "inject");
    expect(
      (await rejection(runtime.resume(paused.sessionState!, "session", { ctx: ctx() }))).code,
    ).toBe("INVALID_STATE");
    expect((await runtime.wait(paused.runId, wait)).status).toBe("succeeded");
    expect(effects).toEqual(["inject"]);
  });

  it("refuses a sessionState resume after the paused execution was cancelled", async () => {
    const effects: string[] = [];
    const runtime = make("cancelled", effects);
    await runtime.start();
    const paused = await runtime.triggerAndWait("default", {}, ctx(), wait);
    expect((await runtime.cancel(paused.runId, { reason: "user left" })).status).toBe("cancelled");
    const err = await rejection(runtime.resume(paused.sessionState!, "late", { ctx: ctx() }));
    expect(err.code).toBe("INVALID_STATE");
    expect(err.message).toMatch(/cancelled/);
    expect(effects).toEqual([]);
  });

  it("lets exactly one of several racing resumes with different inputs win", async () => {
    const effects: string[] = [];
    const runtime = make("race", effects);
    await runtime.start();
    const paused = await runtime.triggerAndWait("default", {}, ctx(), wait);
    const inputs = ["a", "b", "c", "d", "e"];
    const outcomes = await Promise.all(
      inputs.map((ok) =>
        runtime.resume(paused.sessionState!, ok, { ctx: ctx() }).then(
          (r) => ({ id: r.runId }),
          (err: unknown) => ({ code: (err as NervaError).code }),
        ),
      ),
    );
    const won = outcomes.filter((o): o is { id: string } => "id" in o);
    expect(won).toHaveLength(1);
    expect(outcomes.filter((o) => "code" in o && o.code === "INVALID_STATE")).toHaveLength(4);
    expect((await runtime.wait(won[0]!.id, wait)).status).toBe("succeeded");
    expect(effects).toHaveLength(1);
  });
});
