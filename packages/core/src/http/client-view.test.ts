// What an app may send a client about a run: real runs on a real Runner, whose handlers fail the
// way real ones do (an exception whose message carries internals), seen through clientRun and
// clientRunEvent.
import { afterEach, describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { clientRun, clientRunError, clientRunEvent } from "./client-view.js";
import { InMemoryRunStore } from "../runs/memory/in-memory-store.js";
import { RunQueue } from "../runs/run-queue.js";
import { Runner } from "../runs/runner.js";
import type { RunEvent } from "../runs/types.js";

const SECRET = "postgres://app:hunter2@10.0.0.5/ledger";
const runners: Runner[] = [];
afterEach(async () => {
  for (const r of runners.splice(0)) await r.stop({ graceSeconds: 0 });
});

async function setup() {
  const queue = new RunQueue({ store: new InMemoryRunStore(), name: "views" });
  const runtime = new InProcessRuntime()
    .register("crasher", async () => {
      throw new Error(`connect ECONNREFUSED ${SECRET} at /srv/app/ledger.js:12`);
    })
    .register("refuser", async () => {
      throw new NervaError(ErrorCode.PERMISSION_DENIED, "Only staff may issue refunds.");
    })
    .register("fine", async () => "done");
  const runner = new Runner({
    queue,
    runtime,
    concurrency: 2,
    leaseSeconds: 5,
    heartbeatSeconds: 1,
  });
  runners.push(runner);
  await runner.start();
  const ctx = ExecContext.create({ userId: "alice", permissions: { roles: ["staff"] } });
  const run = async (handler: string) => {
    const r = await queue.enqueue({
      handler,
      input: { message: "x" },
      ctx,
      retry: { maxAttempts: 2, initialDelaySeconds: 0.01 },
    });
    const done = await queue.wait(r.id, { timeoutSeconds: 10 });
    const events: RunEvent[] = [];
    for await (const e of queue.events(r.id, { afterSeq: 0 })) events.push(e);
    return { record: done, events };
  };
  return { run };
}

describe("clientRun / clientRunEvent", () => {
  it("show a failed run with no operator data: no context, lease, worker, nor the exception's text", async () => {
    const { run } = await setup();
    const { record, events } = await run("crasher");
    // The server keeps everything, for operators.
    expect(record.status).toBe("failed");
    expect(JSON.stringify(record)).toContain(SECRET);
    expect(JSON.stringify(events)).toContain(SECRET);

    const view = clientRun(record);
    const sent = JSON.stringify([view, events.map(clientRunEvent)]);
    expect(sent).not.toContain(SECRET);
    expect(sent).not.toMatch(/\/srv\/|staff|workerId|fence/);
    expect(view).toMatchObject({
      status: "failed",
      attempt: 2,
      error: { code: "HANDLER_ERROR", message: "the agent failed" },
      result: { status: "error", error: "the agent failed" },
    });
    for (const field of ["context", "lease", "input", "traceId", "userId", "reclaims"]) {
      expect(view).not.toHaveProperty(field);
    }
    // Same events, same order and seq, for Last-Event-ID.
    expect(events.map(clientRunEvent).map((e) => [e.seq, e.type])).toEqual(
      events.map((e) => [e.seq, e.type]),
    );
    expect(events.map(clientRunEvent).find((e) => e.type === "run.retrying")?.data).toMatchObject({
      error: { code: "HANDLER_ERROR", message: "the agent failed" },
    });
  });

  it("show a typed refusal as written, and a success's output", async () => {
    const { run } = await setup();
    const refused = clientRun((await run("refuser")).record);
    expect(refused.error).toMatchObject({
      code: "PERMISSION_DENIED",
      message: "Only staff may issue refunds.",
    });
    expect(refused.result?.error).toBe("Only staff may issue refunds.");
    // Its code came through the runtime (data.code): a permission error is not retried.
    expect(refused.attempt).toBe(1);
    const fine = await run("fine");
    expect(clientRun(fine.record)).toMatchObject({
      status: "succeeded",
      result: { output: "done" },
    });
    expect(fine.events.map(clientRunEvent).at(-1)?.data).toEqual({ output: "done" });
  });

  it("hides the text of server-side codes", () => {
    expect(
      clientRunError({ code: "LEASE_LOST", message: "worker w-3 died", retriable: false }),
    ).toEqual({ code: "INTERNAL", message: "the run failed", retriable: false });
    expect(
      clientRunError({ code: "WRONG_HANDLER", message: "exit 2: /opt/x", retriable: false }),
    ).toEqual({ code: "WRONG_HANDLER", message: "no handler accepted it", retriable: false });
    expect(
      clientRunError({ code: "UNRECOVERABLE", message: "card 4242 declined", retriable: false }),
    ).toEqual({ code: "UNRECOVERABLE", message: "the agent failed", retriable: false });
  });
});
