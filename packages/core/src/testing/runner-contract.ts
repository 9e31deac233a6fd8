import { afterEach, describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError, UnrecoverableError } from "../errors.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { RunQueue } from "../runs/run-queue.js";
import { Runner } from "../runs/runner.js";
import type { RunStore } from "../runs/store.js";
import type { RunEvent } from "../runs/types.js";
import { rejection } from "./rejection.js";

type Setup = () => Promise<{ store: RunStore }>;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function collect(queue: RunQueue, id: string): Promise<RunEvent[]> {
  const out: RunEvent[] = [];
  for await (const e of queue.events(id)) out.push(e);
  return out;
}

/** The Runner's behaviour over a store: part of {@link describeRunStoreContract}. */
export function describeRunnerContract(label: string, setup: Setup): void {
  describe(`runner over ${label}`, () => {
    const cleanup: (() => Promise<void>)[] = [];
    afterEach(async () => {
      for (const c of cleanup.splice(0).reverse()) await c();
    });

    async function start(
      register: (runtime: InProcessRuntime) => void,
      options: {
        concurrency?: number;
        queueRetry?: Record<string, number>;
        leaseSeconds?: number;
        heartbeatSeconds?: number;
      } = {},
    ) {
      const { store } = await setup();
      cleanup.push(() => store.close());
      const queue = new RunQueue({
        store,
        name: "contract",
        retry: { initialDelaySeconds: 0.05, jitter: 0, ...options.queueRetry },
      });
      const runtime = new InProcessRuntime({ timeoutSeconds: 10, circuitBreaker: false });
      register(runtime);
      const runner = new Runner({
        queue,
        runtime,
        concurrency: options.concurrency ?? 2,
        leaseSeconds: options.leaseSeconds ?? 2,
        heartbeatSeconds: options.heartbeatSeconds ?? 0.1,
      });
      await runner.start();
      cleanup.push(() => runner.stop({ graceSeconds: 0 }));
      const ctx = ExecContext.create({
        userId: "alice",
        sessionId: "s1",
        metadata: { tenant: "acme" },
        timeoutSeconds: 60,
      });
      return { store, queue, runtime, runner, ctx };
    }

    it("runs a handler with memoized steps as the enqueuer's identity, and records its events", async () => {
      let seen: Record<string, unknown> = {};
      const { queue, ctx } = await start((rt) =>
        rt.register("steps", async (input, c) => {
          const run = c.run;
          if (run === null) throw new Error("ctx.run missing");
          seen = {
            userId: c.userId,
            traceId: c.traceId,
            tenant: c.metadata.tenant,
            runId: run.runId,
          };
          const a = await run.step("a", () => ({ n: Number(input.args.n) }));
          const b = await run.step("b", async () => a.n + 1);
          await run.emit("app.progress", { b });
          return `b=${b}`;
        }),
      );
      expect(ctx.run).toBeNull();
      const run = await queue.enqueue({
        handler: "steps",
        input: { message: "go", args: { n: "1" } },
        ctx,
      });
      const done = await queue.wait(run.id, { timeoutSeconds: 10 });
      expect(done).toMatchObject({ status: "succeeded", attempt: 1, result: { output: "b=2" } });
      expect(seen).toEqual({
        userId: "alice",
        traceId: ctx.traceId,
        tenant: "acme",
        runId: run.id,
      });
      const types = (await collect(queue, run.id)).map((e) => e.type);
      expect(types).toEqual([
        "run.enqueued",
        "run.started",
        "step.started",
        "step.completed",
        "step.started",
        "step.completed",
        "app.progress",
        "run.succeeded",
      ]);
    });

    it("retries thrown errors after the backoff delay and succeeds on a later attempt", async () => {
      let calls = 0;
      const { queue, ctx } = await start((rt) =>
        rt.register("flaky", async () => {
          calls += 1;
          if (calls < 3) throw new Error(`flake ${calls}`);
          return "ok";
        }),
      );
      const run = await queue.enqueue({
        handler: "flaky",
        input: { message: "x" },
        ctx,
        retry: { maxAttempts: 3, initialDelaySeconds: 0.2, backoffFactor: 2, jitter: 0 },
      });
      const done = await queue.wait(run.id, { timeoutSeconds: 10 });
      expect(done).toMatchObject({ status: "succeeded", attempt: 3 });
      const events = await collect(queue, run.id);
      const retrying = events.filter((e) => e.type === "run.retrying");
      expect(retrying.map((e) => e.data.delaySeconds)).toEqual([0.2, 0.4]);
      const starts = events.filter((e) => e.type === "run.started");
      expect(starts).toHaveLength(3);
      expect((starts[1] as RunEvent).at - (retrying[0] as RunEvent).at).toBeGreaterThanOrEqual(190);
      expect((starts[2] as RunEvent).at - (retrying[1] as RunEvent).at).toBeGreaterThanOrEqual(390);
    });

    it("fails at once on unknown handlers, bad input inside steps and UnrecoverableErrors", async () => {
      const { queue, ctx } = await start((rt) => {
        rt.register("bad_step", async (_i, c) => {
          await c.run!.step("date", () => new Date() as unknown as string);
          return "unreachable";
        });
        rt.register("permanent", async (_i, c) => {
          await c.run!.step("call", () => {
            throw new UnrecoverableError("card declined");
          });
        });
      });
      const retry = { maxAttempts: 5 };
      const unknown = await queue.enqueue({
        handler: "nobody",
        input: { message: "x" },
        ctx,
        retry,
      });
      const badStep = await queue.enqueue({
        handler: "bad_step",
        input: { message: "x" },
        ctx,
        retry,
      });
      const permanent = await queue.enqueue({
        handler: "permanent",
        input: { message: "x" },
        ctx,
        retry,
      });
      const a = await queue.wait(unknown.id, { timeoutSeconds: 10 });
      expect(a).toMatchObject({
        status: "failed",
        attempt: 1,
        error: { code: "NOT_FOUND", retriable: false },
      });
      const b = await queue.wait(badStep.id, { timeoutSeconds: 10 });
      expect(b).toMatchObject({ status: "failed", attempt: 1, error: { code: "INVALID_INPUT" } });
      expect(b.error?.message).toMatch(/value of step "date".*Date/);
      const c = await queue.wait(permanent.id, { timeoutSeconds: 10 });
      expect(c).toMatchObject({
        status: "failed",
        attempt: 1,
        error: { code: "UNRECOVERABLE", retriable: false },
      });
    });

    it("ends exhausted runs failed (the dead-letter list) and redrives them with their steps", async () => {
      let bodies = 0;
      let healthy = false;
      const { queue, ctx } = await start((rt) =>
        rt.register("exhaust", async (_i, c) => {
          await c.run!.step("once", () => {
            bodies += 1;
            return 1;
          });
          if (!healthy) throw new Error("still broken");
          return "fixed";
        }),
      );
      const run = await queue.enqueue({
        handler: "exhaust",
        input: { message: "x" },
        ctx,
        retry: { maxAttempts: 2 },
      });
      const failed = await queue.wait(run.id, { timeoutSeconds: 10 });
      expect(failed).toMatchObject({
        status: "failed",
        attempt: 2,
        error: { code: "HANDLER_ERROR" },
      });
      expect((await queue.list({ status: "failed" })).runs.map((r) => r.id)).toEqual([run.id]);
      healthy = true;
      await queue.redrive(run.id);
      const done = await queue.wait(run.id, { timeoutSeconds: 10 });
      expect(done).toMatchObject({ status: "succeeded", attempt: 1, result: { output: "fixed" } });
      expect(bodies).toBe(1);
    });

    it("pauses on waitForInput, releases the lease, and replays to the answer without re-running steps", async () => {
      const bodies: string[] = [];
      const { queue, ctx } = await start((rt) =>
        rt.register("approve", async (_i, c) => {
          const order = await c.run!.step("load", () => {
            bodies.push("load");
            return { total: 42 };
          });
          const answer = await c.run!.waitForInput<{ approved: boolean }>("approve", {
            prompt: `Refund ${order.total}?`,
          });
          return answer.approved ? "refunded" : "declined";
        }),
      );
      const run = await queue.enqueue({ handler: "approve", input: { message: "x" }, ctx });
      const paused = await queue.wait(run.id, { until: ["paused"], timeoutSeconds: 10 });
      expect(paused).toMatchObject({
        lease: null,
        pause: { key: "approve", prompt: "Refund 42?", kind: "approval" },
      });
      expect((await rejection(queue.resume(run.id, true, { key: "nope" }))).code).toBe(
        ErrorCode.INVALID_INPUT,
      );
      await queue.resume(run.id, { approved: true });
      const done = await queue.wait(run.id, { timeoutSeconds: 10 });
      expect(done).toMatchObject({
        status: "succeeded",
        attempt: 1,
        result: { output: "refunded" },
      });
      expect(bodies).toEqual(["load"]);
      expect((await rejection(queue.resume(run.id, true))).code).toBe(ErrorCode.INVALID_STATE);
    });

    it("cancels a running run within a heartbeat: its signal aborts and it ends cancelled", async () => {
      let aborted = false;
      const { queue, ctx } = await start((rt) =>
        rt.register("long", async (_i, c) => {
          await c.run!.emit("app.begun");
          await new Promise<void>((resolve) => {
            c.signal.addEventListener("abort", () => {
              aborted = true;
              resolve();
            });
          });
          return "finished anyway";
        }),
      );
      const run = await queue.enqueue({ handler: "long", input: { message: "x" }, ctx });
      for await (const e of queue.events(run.id)) if (e.type === "app.begun") break;
      const asked = Date.now();
      await queue.cancel(run.id, { reason: "user left" });
      const done = await queue.wait(run.id, { timeoutSeconds: 10 });
      expect(done.status).toBe("cancelled");
      expect(aborted).toBe(true);
      expect(Date.now() - asked).toBeLessThan(2_000);
      const types = (await collect(queue, run.id)).map((e) => e.type);
      expect(types.slice(-2)).toEqual(["run.cancel_requested", "run.cancelled"]);
    });

    it("a cancel reaches the running handler at once, not at the worker's next heartbeat", async () => {
      // Heartbeats a minute apart: the abort can only come from the cancel itself. Waiting for
      // the abort (no clock) ends by the runtime's 10 s timeout if the cancel waited for one.
      let abortedBy = "";
      const { queue, ctx } = await start(
        (rt) =>
          rt.register("long", async (_i, c) => {
            await c.run!.emit("app.begun");
            await new Promise<void>((resolve) =>
              c.signal.addEventListener("abort", () => resolve()),
            );
            abortedBy = c.isTimedOut() ? "timeout" : c.isCancelled() ? "cancel" : "other";
            return "finished anyway";
          }),
        { leaseSeconds: 120, heartbeatSeconds: 60 },
      );
      const run = await queue.enqueue({ handler: "long", input: { message: "x" }, ctx });
      for await (const e of queue.events(run.id)) if (e.type === "app.begun") break;
      await queue.cancel(run.id);
      const done = await queue.wait(run.id, { timeoutSeconds: 15 });
      expect(done.status).toBe("cancelled");
      expect(abortedBy).toBe("cancel");
    });

    it("turns streamed chunks into output.delta events, in order", async () => {
      const { queue, ctx } = await start((rt) =>
        rt.register("streamer", async function* () {
          for (let i = 0; i < 20; i++) yield `c${i} `;
        }),
      );
      const run = await queue.enqueue({ handler: "streamer", input: { message: "x" }, ctx });
      const events = await collect(queue, run.id);
      const chunks = events.filter((e) => e.type === "output.delta").map((e) => e.data.chunk);
      expect(chunks).toEqual(Array.from({ length: 20 }, (_, i) => `c${i} `));
      expect(events.at(-1)?.type).toBe("run.succeeded");
      expect((await queue.get(run.id))?.result?.output).toBe(chunks.join(""));
    });

    it("runs a chain, memoizing each handler, pausing on needs_data and merging the answer's args", async () => {
      const calls: string[] = [];
      const { queue, ctx } = await start((rt) => {
        rt.register("extract", async (input) => {
          calls.push("extract");
          return input.message.toUpperCase();
        });
        rt.register("lookup", async (input) => {
          calls.push("lookup");
          if (input.args.city === undefined) {
            return { status: "needs_data", output: "Which city?", data: { missing: ["city"] } };
          }
          return `${input.message} in ${input.args.city}`;
        });
        rt.register("format", async (input) => `[${input.message}]`);
      });
      const run = await queue.enqueue({
        handlers: ["extract", "lookup", "format"],
        input: { message: "weather" },
        ctx,
      });
      const paused = await queue.wait(run.id, { until: ["paused"], timeoutSeconds: 10 });
      expect(paused.pause).toMatchObject({
        kind: "needs_data",
        prompt: "Which city?",
        data: { missing: ["city"] },
      });
      expect((await rejection(queue.resume(run.id, { city: "Oslo" }))).code).toBe(
        ErrorCode.INVALID_INPUT,
      );
      await queue.resume(run.id, { args: { city: "Oslo" } });
      const done = await queue.wait(run.id, { timeoutSeconds: 10 });
      expect(done.result?.output).toBe("[WEATHER in Oslo]");
      expect(calls).toEqual(["extract", "lookup", "lookup"]);
    });

    it("gives each attempt its timeoutSeconds deadline and ends timed_out when attempts run out", async () => {
      const { queue, ctx } = await start((rt) =>
        rt.register(
          "slow",
          (_i, c) =>
            new Promise((resolve) => c.signal.addEventListener("abort", () => resolve("late"))),
        ),
      );
      const run = await queue.enqueue({
        handler: "slow",
        input: { message: "x" },
        ctx,
        timeoutSeconds: 0.2,
        retry: { maxAttempts: 2 },
      });
      const done = await queue.wait(run.id, { timeoutSeconds: 10 });
      expect(done).toMatchObject({ status: "timed_out", attempt: 2, error: { code: "TIMEOUT" } });
    });

    it("stop() hands unfinished runs back to the queue without counting the attempt", async () => {
      const { queue, ctx, runner } = await start((rt) =>
        rt.register(
          "hang",
          (_i, c) =>
            new Promise((resolve) => c.signal.addEventListener("abort", () => resolve("stopped"))),
        ),
      );
      const run = await queue.enqueue({ handler: "hang", input: { message: "x" }, ctx });
      await queue.wait(run.id, { until: ["running"], timeoutSeconds: 10 });
      await runner.stop({ graceSeconds: 0.05 });
      const back = await queue.get(run.id);
      expect(back).toMatchObject({ status: "pending", attempt: 1, lease: null });
      const types = (await queue.store.readEvents(run.id, 0, 100)).map((e) => e.type);
      expect(types.at(-1)).toBe("run.released");
    });

    it("refuses bad input with a typed error naming the field, and loses nothing", async () => {
      const { queue, ctx, runtime } = await start((rt) =>
        rt.register("emitter", async (_i, c) => {
          await c.run!.emit("run.fake");
        }),
      );
      const cases: [unknown, string][] = [
        [{ handler: "", input: { message: "x" }, ctx }, "options.handler"],
        [
          { handler: "a", input: { message: "x" }, ctx, retry: { maxAttempts: 0 } },
          "options.retry.maxAttempts",
        ],
        [{ handler: "a", input: { message: "x" }, ctx, bogus: 1 }, "options"],
        [{ handler: "a", input: { message: 7 }, ctx }, "input.message"],
        [{ handler: "a", input: { message: "x".repeat(1024 * 1024 + 1) }, ctx }, "input"],
        [{ handler: "a", handlers: ["b"], input: { message: "x" }, ctx }, "options.handler"],
      ];
      for (const [options, path] of cases) {
        const err = await rejection(queue.enqueue(options as never));
        expect(err.code, path).toBe(ErrorCode.INVALID_INPUT);
        expect(err.message, path).toContain(path);
      }
      expect((await queue.list()).runs).toEqual([]);
      const tooBig = await rejection(queue.resume("run_x", { big: "x".repeat(1024 * 1024) }));
      expect(tooBig.message).toMatch(/maxStepBytes/);
      expect((await rejection(queue.resume("run_x", 1))).code).toBe(ErrorCode.NOT_FOUND);
      expect((await rejection(queue.cancel("run_x"))).code).toBe(ErrorCode.NOT_FOUND);
      await expect(queue.events("run_x").next()).rejects.toMatchObject({ code: "NOT_FOUND" });
      expect(() => new Runner({ queue, runtime, leaseSeconds: 5, heartbeatSeconds: 5 })).toThrow(
        /heartbeatSeconds/,
      );
      const reserved = await queue.enqueue({ handler: "emitter", input: { message: "x" }, ctx });
      const done = await queue.wait(reserved.id, { timeoutSeconds: 10 });
      expect(done).toMatchObject({
        status: "failed",
        attempt: 1,
        error: { code: "INVALID_INPUT" },
      });
      expect(done.error?.message).toMatch(/reserved/);
      expect(new NervaError(ErrorCode.LEASE_LOST, "x").code).toBe("LEASE_LOST");
    });

    it("runs up to `concurrency` runs at once", async () => {
      let running = 0;
      let peak = 0;
      const { queue, ctx } = await start(
        (rt) =>
          rt.register("busy", async () => {
            running += 1;
            peak = Math.max(peak, running);
            await sleep(50);
            running -= 1;
            return "ok";
          }),
        { concurrency: 3 },
      );
      const runs = await Promise.all(
        Array.from({ length: 9 }, (_, i) =>
          queue.enqueue({ handler: "busy", input: { message: `${i}` }, ctx }),
        ),
      );
      for (const r of runs)
        expect((await queue.wait(r.id, { timeoutSeconds: 10 })).status).toBe("succeeded");
      expect(peak).toBe(3);
    });
  });
}
