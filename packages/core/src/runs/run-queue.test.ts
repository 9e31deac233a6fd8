// RunQueue and Runner at their public boundary: options that are not objects (null from
// JavaScript callers) get a typed error naming them, not a TypeError. Real SQLite store.
import { describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { RunQueue } from "./run-queue.js";
import { Runner } from "./runner.js";
import { SqliteRunStore } from "./sqlite-run-store.js";
import { rejection } from "../testing/rejection.js";

describe("RunQueue and Runner options", () => {
  it("refuse options that are not objects with a typed error naming them, and change nothing", async () => {
    const store = new SqliteRunStore({ path: ":memory:" });
    try {
      const queue = new RunQueue({ store, name: "opts" });
      const run = await queue.enqueue({
        handler: "a",
        input: { message: "m" },
        ctx: ExecContext.create(),
      });
      const n = null as never;
      const runner = new Runner({ queue, runtime: new InProcessRuntime() });
      for (const [label, fn] of [
        ["queue.cancel", () => queue.cancel(run.id, n)],
        ["queue.resume", () => queue.resume(run.id, 1, n)],
        ["new Runner", () => new Runner(n)],
        ["runner.stop", () => runner.stop(n)],
      ] as const) {
        const err = await rejection((async () => fn())());
        expect(err.code, label).toMatch(/^INVALID_(INPUT|OPTIONS)$/);
        expect(err.message, label).toMatch(/options/);
      }
      expect((await queue.get(run.id))?.status).toBe("pending");
    } finally {
      await store.close();
    }
  });
});
