// A Runner needs only its handlers: it owns a queue on an in-memory store unless given one.
import { describe, expect, it } from "vitest";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { InMemoryRunStore } from "./memory/in-memory-store.js";
import { RunQueue } from "./run-queue.js";
import { Runner } from "./runner.js";

describe("Runner defaults", () => {
  it("runs handlers given by name on its own queue, through a pause and a resume", async () => {
    const runner = new Runner({
      handlers: {
        refund: async (input, ctx) => {
          const ok = await ctx.run!.waitForInput<string>("approve", { prompt: "Refund?" });
          return `${ok} ${input.message}`;
        },
      },
    });
    expect(runner.queue).toBeInstanceOf(RunQueue);
    expect(runner.queue.store).toBeInstanceOf(InMemoryRunStore);
    expect(runner.runtime.handlerNames()).toEqual(["refund"]);
    await runner.start();
    try {
      const { id } = await runner.queue.enqueue({
        handler: "refund",
        input: { message: "order 42" },
      });
      expect((await runner.queue.wait(id, { until: ["paused"] })).pause?.prompt).toBe("Refund?");
      await runner.queue.resume(id, "approved");
      const done = await runner.queue.wait(id);
      expect(done.status).toBe("succeeded");
      expect(done.result?.output).toBe("approved order 42");
    } finally {
      await runner.stop();
    }
  });

  it("does not count pauses as failures in the default runtime's circuit breaker", async () => {
    // The default breaker opens after 3 failures in a row: 8 runs all waiting on a person must
    // all pause, and all finish once answered.
    const runner = new Runner({
      concurrency: 4,
      handlers: {
        chat: async (input, ctx) =>
          `${await ctx.run!.waitForInput<string>("ok", { prompt: "Go?" })} ${input.message}`,
      },
    });
    await runner.start();
    try {
      const ids: string[] = [];
      for (let i = 0; i < 8; i++) {
        const { id } = await runner.queue.enqueue({ handler: "chat", input: { message: `m${i}` } });
        expect((await runner.queue.wait(id, { until: ["paused", "failed"] })).status).toBe(
          "paused",
        );
        ids.push(id);
      }
      for (const id of ids) await runner.queue.resume(id, "yes");
      const done = await Promise.all(ids.map((id) => runner.queue.wait(id)));
      expect(done.map((r) => r.status)).toEqual(Array(8).fill("succeeded"));
      expect(done.map((r) => r.result?.output)).toEqual(ids.map((_, i) => `yes m${i}`));
    } finally {
      await runner.stop();
    }
  });

  it("finishes through the store's finishAndClaim when it has one, and runs what that claimed", async () => {
    const calls: string[] = [];
    class ClaimingStore extends InMemoryRunStore {
      override finish(...args: Parameters<InMemoryRunStore["finish"]>) {
        calls.push("finish");
        return super.finish(...args);
      }
      async finishAndClaim(
        lease: Parameters<InMemoryRunStore["finish"]>[0],
        outcome: Parameters<InMemoryRunStore["finish"]>[1],
        next: Parameters<InMemoryRunStore["claim"]>[0],
      ) {
        calls.push("finishAndClaim");
        const run = await super.finish(lease, outcome);
        return { run, next: await this.claim({ ...next, waitSeconds: 0 }) };
      }
    }
    const queue = new RunQueue({ store: new ClaimingStore() });
    const runner = new Runner({ queue, handlers: { echo: async (input) => input.message } });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await queue.enqueue({ handler: "echo", input: { message: `m${i}` } })).id);
    }
    await runner.start();
    try {
      const done = await Promise.all(ids.map((id) => queue.wait(id)));
      expect(done.map((r) => r.result?.output)).toEqual(["m0", "m1", "m2", "m3", "m4"]);
      // Every finish went through finishAndClaim, and the runs it claimed ran.
      expect(calls).toEqual(Array(5).fill("finishAndClaim"));
    } finally {
      await runner.stop();
    }
  });

  it("takes a queue and a runtime as before, and refuses both or neither of runtime and handlers", () => {
    const queue = new RunQueue({ store: new InMemoryRunStore() });
    const runtime = new InProcessRuntime();
    expect(new Runner({ queue, runtime }).queue).toBe(queue);
    expect(() => new Runner({ runtime, handlers: { a: async () => "a" } })).toThrow(
      /give exactly one of runtime .* or handlers/,
    );
    expect(() => new Runner({})).toThrow(/give exactly one of runtime .* or handlers/);
    expect(() => new Runner({ handlers: { a: "nope" as never } })).toThrow(/handlers\.a/);
  });
});
