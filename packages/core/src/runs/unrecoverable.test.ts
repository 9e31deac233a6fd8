// The one way user code says "do not retry": a handler that throws an UnrecoverableError fails its
// run at once, with attempts left; anything else it throws is retried. Whether a NervaError is
// retried is its code's row of ERROR_POLICY. A real Runner on the in-memory, SQLite and Redis
// stores.
import { afterEach, describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError, UnrecoverableError } from "../errors.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { clientRunError } from "../http/client-view.js";
import { RunQueue } from "./run-queue.js";
import { Runner } from "./runner.js";
import type { RunStore } from "./store.js";
import { storeBackends } from "./store-backends.test-support.js";

const open: { store: RunStore; runner: Runner }[] = [];
afterEach(async () => {
  for (const { store, runner } of open.splice(0)) {
    await runner.stop({ graceSeconds: 0 });
    await store.close();
  }
});

const backends = storeBackends("unrecoverable");
// Attempts left, and retries quick enough that a retried run exhausts them within the test.
const retry = { maxAttempts: 3, initialDelaySeconds: 0.01, jitter: 0 };

async function start(make: () => RunStore, calls: Map<string, number>) {
  const store = make();
  const count = (name: string) => calls.set(name, (calls.get(name) ?? 0) + 1);
  const runtime = new InProcessRuntime()
    .register("declined", () => {
      count("declined");
      throw new UnrecoverableError("card 4242 declined");
    })
    .register("declined_in_step", async (_input, ctx) => {
      count("declined_in_step");
      return ctx.run!.step("charge", () => {
        throw new UnrecoverableError("card declined", { cause: new Error("402") });
      });
    })
    .register("flaky", async (_input, ctx) => {
      count("flaky");
      // A flag on a plain error is not a way to stop retries: only UnrecoverableError is.
      return ctx.run!.step("call", () => {
        throw Object.assign(new Error("connection reset"), { retriable: false });
      });
    })
    .register("missing_dependency", () => {
      count("missing_dependency");
      throw new NervaError(ErrorCode.MISSING_DEPENDENCY, "install better-sqlite3", {
        details: { package: "better-sqlite3" },
      });
    });
  const queue = new RunQueue({ store, name: "unrecoverable" });
  const runner = new Runner({ queue, runtime, leaseSeconds: 5, heartbeatSeconds: 1 });
  open.push({ store, runner });
  await runner.start();
  const run = async (handler: string) => {
    const { id } = await queue.enqueue({
      handler,
      input: { message: "x" },
      ctx: ExecContext.create(),
      retry,
    });
    return queue.wait(id, { timeoutSeconds: 20 });
  };
  return { run };
}

describe.each(backends)("UnrecoverableError in a durable run on %s", (_name, make) => {
  it("fails the run at once, thrown by the handler or inside a step", async () => {
    const calls = new Map<string, number>();
    const { run } = await start(make, calls);
    for (const handler of ["declined", "declined_in_step"]) {
      const done = await run(handler);
      expect(done, handler).toMatchObject({
        status: "failed",
        attempt: 1,
        error: { code: "UNRECOVERABLE", retriable: false },
      });
      expect(done.error?.message, handler).toMatch(/card (4242 )?declined/);
      expect(calls.get(handler), handler).toBe(1);
    }
    // What a client sees of it: the code, not the operator's text.
    const shown = clientRunError((await run("declined")).error!);
    expect(shown).toEqual({ code: "UNRECOVERABLE", message: "the agent failed", retriable: false });
  });

  it("retries any other thrown error, a `retriable: false` flag on it included", async () => {
    const calls = new Map<string, number>();
    const { run } = await start(make, calls);
    const done = await run("flaky");
    expect(done).toMatchObject({
      status: "failed",
      attempt: 3,
      error: { code: "HANDLER_ERROR", retriable: true },
    });
    expect(calls.get("flaky")).toBe(3);
  });

  it("fails at once on a NervaError whose code ERROR_POLICY says no retry can help", async () => {
    const calls = new Map<string, number>();
    const { run } = await start(make, calls);
    const done = await run("missing_dependency");
    expect(done).toMatchObject({
      status: "failed",
      attempt: 1,
      error: { code: "MISSING_DEPENDENCY", retriable: false },
    });
    expect(calls.get("missing_dependency")).toBe(1);
  });
});
