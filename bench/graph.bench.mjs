// GraphExecutor per-node overhead over calling the node functions in a loop, measured from the
// first node's start to the last node's end, with the in-memory run store and with SqliteRunStore
// on a file in the system temp folder (each node visit = one step, committed with the state after
// it). Also reported: the process's CPU time per node over the same span (user + system), which
// other work on the machine inflates less than the wall time.
// Then the chains of issue 21 §5 (graph-chain.mjs): N distinct trivial nodes in a line, each
// adding 1 to a counter, trigger → completed through triggerAndWait, median and p99 of many
// executions: the 20-node chain end to end, and the 200-node chain per node (first node's start
// to last node's end, divided by 200; end to end per node beside it; the process's CPU time
// per node over the same span beside that). Baseline: the same node functions called in a loop,
// in the same run.
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
import { loopNs as chainLoopNs, pct, runChain } from "./graph-chain.mjs";

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
    if (result.status !== "succeeded" || result.state.n !== NODES)
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

// The chains, on a fresh store each (the SQLite ones in the same temp folder).
const ms = (us) => +(us / 1000).toFixed(3);
const us = (ns) => +(ns / 1000).toFixed(2);
const loop20 = chainLoopNs(20);
const loop200 = chainLoopNs(200);
const chain20 = async (store, rounds) => {
  const r = await runChain(store, 20, { rounds, warmup: Math.ceil(rounds / 4) });
  const median = pct(r.totalUs, 50);
  return {
    median_ms: ms(median),
    p99_ms: ms(pct(r.totalUs, 99)),
    ratio_to_loop: Math.round((median * 1000) / loop20.medianNs),
  };
};
const chain200 = async (store, rounds) => {
  const r = await runChain(store, 200, { rounds, warmup: Math.ceil(rounds / 4), cpu: true });
  const node = pct(r.perNodeNs, 50);
  return {
    per_node_us: us(node),
    per_node_p99_us: us(pct(r.perNodeNs, 99)),
    cpu_per_node_us: us(pct(r.cpuPerNodeNs, 50)),
    end_to_end_per_node_us: +(pct(r.totalUs, 50) / 200).toFixed(2),
    ratio_to_loop: Math.round(node / (loop200.medianNs / 200)),
  };
};
const chains = {
  loop_20_us: us(loop20.medianNs),
  chain20_memory: await chain20(new InMemoryRunStore(), 2000),
  chain20_sqlite: await chain20(new SqliteRunStore({ path: join(dir, "chain20.db") }), 500),
  loop_200_per_node_ns: +(loop200.medianNs / 200).toFixed(1),
  chain200_memory: await chain200(new InMemoryRunStore(), 200),
  chain200_sqlite: await chain200(new SqliteRunStore({ path: join(dir, "chain200.db") }), 60),
};
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
    ...chains,
  }),
);
