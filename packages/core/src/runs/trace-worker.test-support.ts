// A worker process for the trace test of durable runs (trace-join.test.ts): a Runner over a
// SQLite file whose trace sink appends every ended span, as one JSON line, to a log. Prints
// "ready" once claiming; stops on SIGTERM.
import { appendFileSync } from "node:fs";
import type { Span } from "../context/span.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { RunQueue } from "./run-queue.js";
import { Runner } from "./runner.js";
import { SqliteRunStore } from "./sqlite/sqlite-run-store.js";

const config = JSON.parse(process.env["NERVA_TEST_CONFIG"] ?? "{}") as {
  path: string;
  log: string;
};

const line = (span: Span) => ({
  name: span.name,
  kind: span.kind,
  trace_id: span.traceId,
  span_id: span.id,
  parent_id: span.parentId,
  status: span.status,
  error: span.error,
  attributes: span.attributes,
  usage: span.usage,
  pid: process.pid,
});

const store = new SqliteRunStore({ path: config.path });
const queue = new RunQueue({ store, name: "traced" });
const runtime = new InProcessRuntime({ timeoutSeconds: 30, circuitBreaker: false });
runtime.register("traced", async (input, ctx) => {
  await ctx.span("work", async (inner) => {
    inner.recordTokens({ promptTokens: 3, completionTokens: 2 });
  });
  if (input.args["fail_first"] === "1" && ctx.run?.attempt === 1) throw new Error("first try");
  return `done on attempt ${ctx.run?.attempt}`;
});

const runner = new Runner({
  queue,
  runtime,
  leaseSeconds: 5,
  heartbeatSeconds: 1,
  traceSink: { onSpanEnd: (span) => appendFileSync(config.log, `${JSON.stringify(line(span))}\n`) },
});
await runner.start();
process.stdout.write("ready\n");
process.on("SIGTERM", () => {
  void runner
    .stop({ graceSeconds: 1 })
    .then(() => store.close())
    .then(() => process.exit(0));
});
