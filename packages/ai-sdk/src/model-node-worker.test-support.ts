// A worker process for the model node crash test: a GraphHost over a SQLite file whose graph
// asks a model (the fake server the test runs) and then writes the answer. With `hang`, the node
// logs "answered" once the model's answer is committed and then waits to be SIGKILLed.
import { appendFileSync } from "node:fs";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { InProcessRuntime, RunQueue, GraphHost } from "@nerva/core";
import { SqliteRunStore } from "@nerva/core/sqlite";
import { createModel } from "./index.js";
import { askOnceGraph } from "./model-node-graph.test-support.js";

const config = JSON.parse(process.env.NERVA_TEST_CONFIG ?? "{}") as {
  path: string;
  baseURL: string;
  log: string;
  hang: boolean;
};
const log = (ev: string): void =>
  appendFileSync(config.log, `${JSON.stringify({ ev, pid: process.pid })}\n`);

const model = createModel(
  createOpenAICompatible({ name: "fake", baseURL: config.baseURL, includeUsage: true }).chatModel(
    "gpt-4o-mini",
  ),
);
const graph = askOnceGraph(model, () => {
  log("answered");
  // Blocks this worker (no heartbeat, no commit) until the test SIGKILLs it.
  if (config.hang) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60_000);
});

const store = new SqliteRunStore({ path: config.path });
const runtime = new GraphHost({
  graph,
  runtime: new InProcessRuntime(),
  queue: new RunQueue({ store, name: "model-node" }),
  runner: { leaseSeconds: 1, heartbeatSeconds: 0.25, workerId: `w:${process.pid}` },
});
await runtime.start();
process.stdout.write("ready\n");
process.on("SIGTERM", () => {
  void runtime
    .stop({ graceSeconds: 0 })
    .then(() => store.close())
    .then(() => process.exit(0));
});
