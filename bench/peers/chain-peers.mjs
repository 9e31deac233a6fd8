// The 20-node chain (each node adds 1 to a counter), trigger → completed, on Nerva, Mastra and
// LangGraph.js in one process, one run: in memory and on an SQLite file for each. Median and p99
// of ROUNDS executions after WARMUP. Run: cd bench/peers && npm install && node chain-peers.mjs
// (Nerva from the workspace build: pnpm build first).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";

const SIZE = 20;
const ROUNDS = Number(process.env.ROUNDS ?? 500);
const WARMUP = Number(process.env.WARMUP ?? 100);
const dir = mkdtempSync(join(tmpdir(), "nerva-peers-"));
const pct = (xs, p) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];

async function measure(label, once) {
  const ms = [];
  for (let r = 0; r < WARMUP + ROUNDS; r++) {
    const t0 = process.hrtime.bigint();
    const count = await once(r);
    const t1 = process.hrtime.bigint();
    if (count !== SIZE) throw new Error(`${label}: count ${count}, not ${SIZE}`);
    if (r >= WARMUP) ms.push(Number(t1 - t0) / 1e6);
  }
  return { label, median_ms: +pct(ms, 50).toFixed(3), p99_ms: +pct(ms, 99).toFixed(3) };
}

async function nerva(kind) {
  const core = await import("@nerva/core");
  const { SqliteRunStore } = await import("@nerva/core/sqlite");
  const nodes = {};
  const edges = [];
  for (let i = 0; i < SIZE; i++) {
    nodes[`n${i}`] = core.fnNode((s) => ({ count: s.count + 1 }));
    edges.push([`n${i}`, i === SIZE - 1 ? core.END : `n${i + 1}`]);
  }
  const graph = core.defineGraph({
    name: "chain",
    state: z.object({ count: z.number() }),
    nodes,
    edges,
    entry: "n0",
  });
  const store =
    kind === "sqlite"
      ? new SqliteRunStore({ path: join(dir, "nerva.db") })
      : new core.InMemoryRunStore();
  const createHost = core.GraphHost ? (o) => new core.GraphHost(o) : core.createGraphRuntime;
  const host = createHost({
    graph,
    runtime: new core.InProcessRuntime(),
    queue: new core.RunQueue({ store, name: "chain" }),
    concurrency: 1,
  });
  await host.start();
  const ctx = core.ExecContext.create();
  const result = await measure(`nerva ${kind}`, async () => {
    const r = await host.triggerAndWait("default", { count: 0 }, ctx);
    return r.state.count;
  });
  await host.stop();
  await store.close();
  return result;
}

async function mastra(kind) {
  const { Mastra } = await import("@mastra/core/mastra");
  const { createWorkflow, createStep } = await import("@mastra/core/workflows");
  const State = z.object({ count: z.number() });
  let wf = createWorkflow({ id: "chain", inputSchema: State, outputSchema: State });
  for (let i = 0; i < SIZE; i++) {
    wf = wf.then(
      createStep({
        id: `n${i}`,
        inputSchema: State,
        outputSchema: State,
        execute: async ({ inputData }) => ({ count: inputData.count + 1 }),
      }),
    );
  }
  wf.commit();
  let storage;
  if (kind === "sqlite") {
    const { LibSQLStore } = await import("@mastra/libsql");
    storage = new LibSQLStore({ id: "bench", url: `file:${join(dir, "mastra.db")}` });
  } else {
    const { InMemoryStore } = await import("@mastra/core/storage");
    storage = new InMemoryStore();
  }
  const app = new Mastra({ workflows: { chain: wf }, storage, logger: false });
  const workflow = app.getWorkflow("chain");
  return measure(`mastra ${kind === "sqlite" ? "libsql" : "memory"}`, async () => {
    const run = await workflow.createRun();
    const r = await run.start({ inputData: { count: 0 } });
    return r.status === "success" ? r.result.count : -1;
  });
}

async function langgraph(kind) {
  const { StateGraph, Annotation, MemorySaver, START, END } = await import("@langchain/langgraph");
  const State = Annotation.Root({ count: Annotation() });
  const g = new StateGraph(State);
  for (let i = 0; i < SIZE; i++) g.addNode(`n${i}`, (s) => ({ count: s.count + 1 }));
  g.addEdge(START, "n0");
  for (let i = 0; i < SIZE; i++) g.addEdge(`n${i}`, i === SIZE - 1 ? END : `n${i + 1}`);
  let checkpointer;
  if (kind === "sqlite") {
    const { SqliteSaver } = await import("@langchain/langgraph-checkpoint-sqlite");
    checkpointer = SqliteSaver.fromConnString(join(dir, "langgraph.db"));
  } else {
    checkpointer = new MemorySaver();
  }
  const app = g.compile({ checkpointer });
  return measure(`langgraph ${kind === "sqlite" ? "SqliteSaver" : "MemorySaver"}`, async (r) => {
    const out = await app.invoke({ count: 0 }, { configurable: { thread_id: `t${r}` } });
    return out.count;
  });
}

const only = process.argv.slice(2);
const runs = [
  ["nerva", "memory", nerva],
  ["nerva", "sqlite", nerva],
  ["mastra", "memory", mastra],
  ["mastra", "sqlite", mastra],
  ["langgraph", "memory", langgraph],
  ["langgraph", "sqlite", langgraph],
];
const results = [];
for (const [name, kind, fn] of runs) {
  if (only.length > 0 && !only.includes(name)) continue;
  try {
    results.push(await fn(kind));
  } catch (err) {
    results.push({ label: `${name} ${kind}`, error: String(err?.message ?? err).slice(0, 300) });
  }
  console.error(JSON.stringify(results[results.length - 1]));
}
rmSync(dir, { recursive: true, force: true });
console.log(
  JSON.stringify({
    bench: "graph-peers",
    nodes: SIZE,
    rounds: ROUNDS,
    node: process.version,
    results,
  }),
);
