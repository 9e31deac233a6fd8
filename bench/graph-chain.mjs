// The chain workloads of bench/graph.bench.mjs, importable on their own (profiling, A/B runs):
// a graph of N distinct trivial nodes in a line, each adding 1 to a counter, triggered and awaited
// (`triggerAndWait`, trigger → succeeded) over and over on one GraphHost.
import { z } from "zod";
import {
  END,
  ExecContext,
  InProcessRuntime,
  RunQueue,
  GraphHost,
  defineGraph,
  fnNode,
} from "@nerva/core";

export const sorted = (xs) => [...xs].sort((a, b) => a - b);
export const pct = (xs, p) =>
  sorted(xs)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];

/**
 * The chain's node functions, with hooks that time the first node's start and the last one's
 * end, in wall time and (`cpu`: outside the wall window) in the process's CPU time.
 */
export function chainNodes(size, marks = { first: 0n, last: 0n }, cpu = false) {
  const fns = Array.from({ length: size }, (_, i) => {
    if (i === 0) {
      return (s) => {
        if (cpu) marks.cpuFirst = process.cpuUsage();
        marks.first = process.hrtime.bigint();
        return { count: s.count + 1 };
      };
    }
    if (i === size - 1) {
      return (s) => {
        const out = { count: s.count + 1 };
        marks.last = process.hrtime.bigint();
        if (cpu) marks.cpuLast = process.cpuUsage(marks.cpuFirst);
        return out;
      };
    }
    return (s) => ({ count: s.count + 1 });
  });
  return fns;
}

export function chainGraph(size, marks, cpu = false) {
  const fns = chainNodes(size, marks, cpu);
  const nodes = Object.fromEntries(fns.map((fn, i) => [`n${i}`, fnNode(fn)]));
  const edges = fns.map((_, i) => [`n${i}`, i === size - 1 ? END : `n${i + 1}`]);
  return defineGraph({
    name: `chain_${size}`,
    state: z.object({ count: z.number() }),
    nodes,
    edges,
    entry: "n0",
    maxSteps: size + 1,
  });
}

/** Baseline: the same node functions called in a loop, each answer merged into the state (ns). */
export function loopNs(size, rounds = 2000) {
  const marks = { first: 0n, last: 0n };
  const fns = chainNodes(size, marks);
  const once = () => {
    const t0 = process.hrtime.bigint();
    let s = { count: 0 };
    for (const fn of fns) s = { ...s, ...fn(s) };
    if (s.count !== size) throw new Error("loop");
    return Number(process.hrtime.bigint() - t0);
  };
  for (let i = 0; i < rounds; i++) once();
  const xs = Array.from({ length: rounds }, once);
  return { medianNs: pct(xs, 50), p99Ns: pct(xs, 99) };
}

/**
 * `rounds` executions of the chain through `triggerAndWait` after `warmup` ones, on `store`
 * (closed at the end); returns the trigger → completed times (µs) and the first-start →
 * last-end times per node (ns), and with `cpu` the process's CPU time (user + system) per node
 * over the same span (ns), which other work on the machine inflates less than the wall time.
 */
export async function runChain(store, size, { rounds, warmup, cpu = false }) {
  const marks = { first: 0n, last: 0n, cpuFirst: null, cpuLast: null };
  const graph = chainGraph(size, marks, cpu);
  const runtime = new GraphHost({
    graph,
    runtime: new InProcessRuntime(),
    queue: new RunQueue({ store, name: `chain${size}` }),
    runner: { concurrency: 1 },
  });
  await runtime.start();
  const ctx = ExecContext.create();
  const totalUs = [];
  const perNodeNs = [];
  const cpuPerNodeNs = [];
  for (let r = 0; r < warmup + rounds; r++) {
    const t0 = process.hrtime.bigint();
    const result = await runtime.triggerAndWait("default", { count: 0 }, ctx);
    const t1 = process.hrtime.bigint();
    if (result.status !== "succeeded" || result.state.count !== size) {
      throw new Error(`chain ${size}: ${result.status} ${JSON.stringify(result.error)}`);
    }
    if (r < warmup) continue;
    totalUs.push(Number(t1 - t0) / 1000);
    perNodeNs.push(Number(marks.last - marks.first) / size);
    if (cpu) cpuPerNodeNs.push(((marks.cpuLast.user + marks.cpuLast.system) * 1000) / size);
  }
  await runtime.stop();
  await store.close();
  return { totalUs, perNodeNs, cpuPerNodeNs };
}
