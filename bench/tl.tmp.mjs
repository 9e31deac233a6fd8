import { ExecContext } from "@nerva/core";
import { SqliteRunStore } from "@nerva/core/sqlite";
import { InMemoryRunStore, GraphHost, InProcessRuntime, RunQueue } from "@nerva/core";
import { chainGraph } from "./graph-chain.mjs";
const inner = process.argv[2] === "memory" ? new InMemoryRunStore() : new SqliteRunStore({ path: `/tmp/tl-${process.pid}.db` });
let T0 = 0n; let rec = null;
const store = new Proxy(inner, { get(t, k) { const v = t[k]; if (typeof v !== "function") return v; return function (...a) { const s = process.hrtime.bigint(); const r = v.apply(t, a); const e = process.hrtime.bigint(); if (rec) rec.push([String(k), Number(s - T0) / 1000, Number(e - s) / 1000]); return r; }; } });
const size = 20, marks = { first: 0n, last: 0n };
const host = new GraphHost({ graph: chainGraph(size, marks), runtime: new InProcessRuntime(), queue: new RunQueue({ store, name: "tl" }), runner: { concurrency: 1 } });
await host.start();
const ctx = ExecContext.create();
const all = [];
for (let r = 0; r < 1500; r++) {
  rec = []; T0 = process.hrtime.bigint();
  await host.triggerAndWait("default", { count: 0 }, ctx);
  const end = Number(process.hrtime.bigint() - T0) / 1000;
  rec.push(["first node", Number(marks.first - T0) / 1000, 0], ["last node", Number(marks.last - T0) / 1000, 0], ["done", end, 0]);
  if (r >= 300) all.push(rec);
}
await host.stop();
// median of each (name, occurrence index) start time and duration
const keyed = new Map();
for (const rec of all) { const occ = new Map(); for (const [k, s, d] of rec) { const i = occ.get(k) ?? 0; occ.set(k, i + 1); if (k === "commitStartedStep" && i > 0 && i < 19) continue; const key = `${k}#${i}`; const e = keyed.get(key) ?? { s: [], d: [] }; e.s.push(s); e.d.push(d); keyed.set(key, e); } }
const med = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1];
for (const [k, e] of [...keyed].sort((a, b) => med(a[1].s) - med(b[1].s))) console.log(k.padEnd(24), "at", med(e.s).toFixed(1).padStart(7), "dur", med(e.d).toFixed(1).padStart(6), "n", e.s.length);
