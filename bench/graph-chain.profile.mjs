// One chain workload alone, for profiling: node --cpu-prof bench/graph-chain.profile.mjs
// <memory|sqlite> [nodes=20] [rounds=3000]. Prints the median trigger → completed time (µs)
// and the median time per node (ns).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { InMemoryRunStore } from "@nerva/core";
import { SqliteRunStore } from "@nerva/core/sqlite";
import { runChain, pct } from "./graph-chain.mjs";
const size = Number(process.argv[3] ?? 20);
const store =
  process.argv[2] === "sqlite"
    ? new SqliteRunStore({ path: join(mkdtempSync(join(tmpdir(), "nerva-chain-")), "runs.db") })
    : new InMemoryRunStore();
const r = await runChain(store, size, { rounds: Number(process.argv[4] ?? 3000), warmup: 300 });
console.log(pct(r.totalUs, 50), pct(r.perNodeNs, 50));
await store.close();
