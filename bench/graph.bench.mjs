// GraphExecutor per-node overhead over calling the node functions in a loop, measured from the
// first node's start to the last node's end, with the in-memory run store and with SqliteRunStore
// on a file in the system temp folder (each node visit = one step, committed with the state after
// it). Also reported: the process's CPU time per node over the same span (user + system), which
// other work on the machine inflates less than the wall time.
// Run: pnpm bench (or: pnpm build && node --expose-gc bench/run.mjs graph)
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import {
  END,
  ExecContext,
  InMemoryRunStore,
  InProcessRuntime,
  RunQueue,
  GraphHost,
  defineGraph,
  fnNode,
} from "@nerva/core";
import { SqliteRunStore } from "@nerva/core/sqlite";

const NODES = 500;
const ROUNDS = 40;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// The node functions, timed by the nodes themselves: the first one's start, the last one's end.
let firstStart = 0n;
let lastEnd = 0n;
let cpuAtStart = process.cpuUsage();
let cpuUs = 0;
const work = (s) => {
  if (s.n === 0) {
    firstStart = process.hrtime.bigint();
    cpuAtStart = process.cpuUsage();
  }
  const next = { n: s.n + 1, total: s.total + s.n };
  if (next.n === NODES) {
    lastEnd = process.hrtime.bigint();
    const cpu = process.cpuUsage(cpuAtStart);
    cpuUs = cpu.user + cpu.system;
  }
  return next;
};

const State = z.object({ n: z.number(), total: z.number() });
const graph = defineGraph({
  name: "bench_loop",
  state: State,
  nodes: { step: fnNode(work) },
  edges: [["step", (s) => (s.n >= NODES ? END : "step"), ["step", END]]],
  entry: "step",
  maxSteps: NODES + 1,
});

/** The same node functions called in a loop, merging each answer into the state. */
function loop() {
  let s = { n: 0, total: 0 };
  for (let i = 0; i < NODES; i++) s = { ...s, ...work(s) };
  return Number(lastEnd - firstStart) / NODES;
}

async function executor(store) {
  const runtime = new GraphHost({
    graph,
    runtime: new InProcessRuntime(),
    queue: new RunQueue({ store, name: "bench" }),
    runner: { concurrency: 1 },
  });
  await runtime.start();
  const perNode = [];
  const cpuPerNode = [];
  for (let r = 0; r < ROUNDS; r++) {
    // The client polls slowly instead of waking on every event: what is timed is the executor.
    const id = await runtime.trigger("default", { n: 0, total: 0 }, ExecContext.create());
    let result = await runtime.get(id);
    while (result.status === "pending" || result.status === "running") {
      await new Promise((r) => setTimeout(r, 20));
      result = await runtime.get(id);
    }
    if (result.status !== "completed" || result.state.n !== NODES)
      throw new Error(JSON.stringify(result.error));
    perNode.push(Number(lastEnd - firstStart) / NODES);
    cpuPerNode.push((cpuUs * 1000) / NODES);
  }
  await runtime.stop();
  // The first rounds warm the JIT.
  return { wallNs: median(perNode.slice(10)), cpuNs: median(cpuPerNode.slice(10)) };
}

for (let i = 0; i < 2000; i++) loop();
const loopNs = median(Array.from({ length: 200 }, loop));
const memory = await executor(new InMemoryRunStore());
const dir = mkdtempSync(join(tmpdir(), "nerva-graph-bench-"));
const sqlite = new SqliteRunStore({ path: join(dir, "runs.db") });
const sqliteRun = await executor(sqlite);
await sqlite.close();
rmSync(dir, { recursive: true, force: true });

console.log(
  JSON.stringify({
    bench: "graph",
    nodes_per_execution: NODES,
    loop_per_node_ns: +loopNs.toFixed(1),
    memory_per_node_ns: +memory.wallNs.toFixed(0),
    memory_added_per_node_us: +((memory.wallNs - loopNs) / 1000).toFixed(2),
    memory_cpu_per_node_us: +(memory.cpuNs / 1000).toFixed(2),
    sqlite_per_node_ns: +sqliteRun.wallNs.toFixed(0),
    sqlite_added_per_node_us: +((sqliteRun.wallNs - loopNs) / 1000).toFixed(2),
    sqlite_cpu_per_node_us: +(sqliteRun.cpuNs / 1000).toFixed(2),
  }),
);
