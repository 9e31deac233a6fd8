// Where a Redis durable run's time goes: one side of the Redis bench (SIDE=nerva|raw, default
// both), CONCURRENCY (16) and RUNS (3000), with this process's CPU and the server's CPU and
// commands per job. Run with --cpu-prof for a CPU profile of the Node side:
//   node --cpu-prof --cpu-prof-dir=/tmp/prof bench/runs-redis.profile.mjs
import { nervaRedis, rawBullmq } from "./runs-redis.mjs";

const sides = (process.env.SIDE ?? "raw,nerva").split(",");
const concurrency = Number(process.env.CONCURRENCY ?? 16);
const runs = Number(process.env.RUNS ?? 3000);
for (const side of sides) {
  const m =
    side === "raw" ? await rawBullmq(concurrency, runs) : await nervaRedis(concurrency, runs);
  console.log(JSON.stringify({ side, concurrency, runs, ...m }));
}
