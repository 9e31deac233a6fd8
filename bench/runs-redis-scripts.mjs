// What Redis runs for each run or job, command by command: one side of the Redis bench (SIDE=nerva
// or raw, RUNS, CONCURRENCY) with SLOWLOG recording every command, then per command (each Lua
// script by its key count and first key) the calls per run and the median and total µs per run.
// Commands called from inside a script are listed too (Redis logs them), so a script's time
// includes theirs. SLOWLOG timing slows the server: read the counts and the split, not the
// absolute µs. It changes the server's slowlog settings while it runs (and puts them back): run it
// against a server of your own, e.g.
//   redis-server --port 6390 --save "" --daemonize yes
//   NERVA_REDIS_URL=redis://127.0.0.1:6390 SIDE=nerva node bench/runs-redis-scripts.mjs
import { createRequire } from "node:module";
import { REDIS_URL, nervaRedis, rawBullmq } from "./runs-redis.mjs";

const requireCore = createRequire(createRequire(import.meta.url).resolve("@nerva/core"));
const { Redis } = requireCore("ioredis");

const side = process.env.SIDE ?? "nerva";
const runs = Number(process.env.RUNS ?? 1000);
const concurrency = Number(process.env.CONCURRENCY ?? 16);
const run = (n) => (side === "raw" ? rawBullmq(concurrency, n) : nervaRedis(concurrency, n));

const admin = new Redis(REDIS_URL);
const [, threshold] = await admin.config("GET", "slowlog-log-slower-than");
const [, maxLen] = await admin.config("GET", "slowlog-max-len");
await run(200); // warm-up outside the log
let log;
try {
  await admin.config("SET", "slowlog-max-len", 1_000_000);
  await admin.config("SET", "slowlog-log-slower-than", 0);
  await admin.slowlog("RESET");
  await run(runs);
  log = await admin.slowlog("GET", 1_000_000);
} finally {
  await admin.config("SET", "slowlog-log-slower-than", threshold);
  await admin.config("SET", "slowlog-max-len", maxLen);
  await admin.slowlog("RESET");
}
admin.disconnect();

// The bench's own bookkeeping (INFO, key clean-up) is not part of a run.
const ignored = new Set(["info", "scan", "del-cleanup", "slowlog", "config", "client", "quit"]);
const shape = (key) => key.replace(/^nerva-bench:[0-9a-f]+:/, "").replace(/run_[0-9a-z]+/g, "<id>");
const groups = new Map();
for (const [, , us, args] of log) {
  let name = String(args[0]).toLowerCase();
  // The clean-up after the measured runs deletes many keys at once.
  if (name === "del" && args.length > 20) name = "del-cleanup";
  if (ignored.has(name)) continue;
  if (name === "evalsha")
    name = `script ${String(args[1]).slice(0, 8)} (${args[2]} keys, ${shape(String(args[3]))})`;
  const g = groups.get(name) ?? [];
  g.push(us);
  groups.set(name, g);
}
// Both sides run 100 runs of warm-up of their own before the measured ones.
const total = runs + 100;
const rows = [...groups].map(([name, v]) => {
  v.sort((a, b) => a - b);
  const us = v.reduce((a, b) => a + b, 0);
  return {
    name,
    per_run: +(v.length / total).toFixed(2),
    median_us: v[v.length >> 1],
    us_per_run: +(us / total).toFixed(1),
  };
});
rows.sort((a, b) => b.us_per_run - a.us_per_run);
console.log(JSON.stringify({ side, runs, concurrency }));
for (const r of rows) if (r.per_run >= 0.01) console.log(JSON.stringify(r));
