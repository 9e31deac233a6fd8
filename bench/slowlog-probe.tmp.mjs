import { nervaRedis, rawBullmq } from "./runs-redis.mjs";
import { createRequire } from "node:module";
const requireCore = createRequire(createRequire(import.meta.url).resolve("@nerva/core"));
const { Redis } = requireCore("ioredis");
const admin = new Redis(process.env.NERVA_REDIS_URL);
const side = process.env.SIDE ?? "nerva";
await (side === "raw" ? rawBullmq(16, 300) : nervaRedis(16, 300));
await admin.config("SET", "slowlog-max-len", 100000);
await admin.config("SET", "slowlog-log-slower-than", 0);
await admin.slowlog("RESET");
const N = 1000;
await (side === "raw" ? rawBullmq(16, N) : nervaRedis(16, N));
const log = await admin.slowlog("GET", 100000);
await admin.config("SET", "slowlog-log-slower-than", 10000);
const scripts = {};
for (const s of await admin.script("LIST").catch(() => [])) {}
const groups = {};
for (const [, , us, args] of log) {
  let name = args[0].toLowerCase();
  if (name === "evalsha") name += ":" + args[1].slice(0, 8) + ":" + args[2];
  (groups[name] ??= []).push(us);
}
const rows = Object.entries(groups).map(([k, v]) => { v.sort((a,b)=>a-b); return [k, v.length, +(v.length/N).toFixed(2), v[Math.floor(v.length/2)], +(v.reduce((a,b)=>a+b,0)/N).toFixed(1)]; });
rows.sort((a,b)=>b[4]-a[4]);
console.log("command calls per_run median_us us_per_run");
for (const r of rows) console.log(r.join("\t"));
admin.disconnect();
