import { copyFileSync, readFileSync, rmSync, mkdirSync } from "node:fs";
import { runChain } from "./graph-chain.mjs";
import { SqliteRunStore } from "@nerva/core/sqlite";
const dir = "/tmp/walx"; rmSync(dir, { recursive: true, force: true }); mkdirSync(dir);
const store = new SqliteRunStore({ path: `${dir}/r.db` });
const origClose = store.close.bind(store);
store.close = async () => { copyFileSync(`${dir}/r.db-wal`, `${dir}/copy.wal`); return origClose(); };
await runChain(store, Number(process.argv[2] ?? 200), { rounds: Number(process.argv[3] ?? 30), warmup: 0 });
const b = readFileSync(`${dir}/copy.wal`);
const pageSize = b.readUInt32BE(8);
let off = 32, frames = 0, commits = 0, hist = new Map(), cur = 0, pages = new Map();
while (off + 24 + pageSize <= b.length) {
  const pg = b.readUInt32BE(off), commit = b.readUInt32BE(off + 4);
  frames++; cur++; pages.set(pg, (pages.get(pg) ?? 0) + 1);
  if (commit !== 0) { commits++; hist.set(cur, (hist.get(cur) ?? 0) + 1); cur = 0; }
  off += 24 + pageSize;
}
console.log({ pageSize, frames, commits, perCommit: (frames / commits).toFixed(2), hist: [...hist].sort((a, b) => a[0] - b[0]) });
console.log("hot pages", [...pages].sort((a, b) => b[1] - a[1]).slice(0, 10));
{ let off = 32, cur = [], n = 0; const out = [];
while (off + 24 + pageSize <= b.length) { const pg = b.readUInt32BE(off), commit = b.readUInt32BE(off + 4); cur.push(pg); if (commit) { out.push(cur.join(",")); cur = []; } off += 24 + pageSize; }
console.log(out.slice(1000, 1120).join(" | "));
const D = (await import("module")).createRequire("/work/wt-perf/packages/core/package.json")("better-sqlite3");
const d = new D(`${dir}/r.db`); console.log(d.prepare("select name, rootpage from sqlite_master").all().map(r => r.name + ":" + r.rootpage).join(" "));
}
