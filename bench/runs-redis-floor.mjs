// The floor of a durable run store on BullMQ: raw BullMQ (runs-redis.mjs) against the same Queue and
// Worker plus the least a run record needs — one small Lua script per transition (enqueue, start,
// finish), each writing a record hash and appending one event to a per-run stream, sent in the
// same round trip as BullMQ's own command where there is one. No indexes, no fencing beyond a
// status check, no steps, no context restore: whatever a real BullMQ-based store does costs at
// least this. If this floor is below 80% of raw BullMQ, no store built on BullMQ reaches the
// target. Run: `flock /tmp/bench.lock node bench/runs-redis-floor.mjs` (ROUNDS, RUNS, CONCURRENCY).
import { randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import { dropPrefix, rawBullmq, REDIS_URL } from "./runs-redis.mjs";

const requireCore = createRequire(createRequire(import.meta.url).resolve("@nerva/core"));
const { Queue, Worker } = requireCore("bullmq");
const { Redis } = requireCore("ioredis");

const ENQUEUE = `redis.call('HSET', KEYS[1], 'status', 'pending', 'input', ARGV[1], 'fence', 0)
redis.call('XADD', KEYS[2], '*', 't', 'run.enqueued')
return 1`;
const START = `if redis.call('HGET', KEYS[1], 'status') ~= 'pending' then return 0 end
local fence = redis.call('HINCRBY', KEYS[1], 'fence', 1)
redis.call('HSET', KEYS[1], 'status', 'running')
redis.call('XADD', KEYS[2], '*', 't', 'run.started', 'fence', fence)
return fence`;
const FINISH = `if redis.call('HGET', KEYS[1], 'fence') ~= ARGV[1] then return 0 end
if ARGV[1] == '0' then redis.call('XADD', KEYS[2], '*', 't', 'run.started') end
redis.call('HSET', KEYS[1], 'status', 'succeeded', 'result', ARGV[2])
redis.call('XADD', KEYS[2], '*', 't', 'run.succeeded')
return 1`;

function scripts(redis) {
  redis.defineCommand("floorEnqueue", { numberOfKeys: 2, lua: ENQUEUE });
  redis.defineCommand("floorStart", { numberOfKeys: 2, lua: START });
  redis.defineCommand("floorFinish", { numberOfKeys: 2, lua: FINISH });
  return redis;
}

async function floor(concurrency, n) {
  const prefix = `nerva-bench:${randomBytes(4).toString("hex")}`;
  const connections = [0, 1].map(() =>
    scripts(new Redis(REDIS_URL, { maxRetriesPerRequest: null })),
  );
  const [qc, wc] = connections;
  const queue = new Queue("floor", { connection: qc, prefix });
  const keys = (id) => [`${prefix}:run:${id}`, `${prefix}:run:${id}:events`];
  let completed = 0;
  let finished;
  let allDone = new Promise((r) => (finished = r));
  let target = 0;
  const worker = new Worker(
    "floor",
    async (job) => {
      // LAZY=1: no start script; the finish writes the start too (a store that claims by BullMQ's
      // lock alone and records the start with the first write).
      const fence = lazy ? 0 : await wc.floorStart(...keys(job.data.id));
      const result = "ok:" + job.data.input.message;
      // The record's finish, sent just before BullMQ's moveToFinished on the same connection.
      void wc.floorFinish(...keys(job.data.id), String(fence), result);
      return result;
    },
    { connection: wc, prefix, concurrency, removeOnComplete: { count: 0 } },
  );
  worker.on("completed", () => {
    if (++completed === target) finished();
  });
  await worker.waitUntilReady();
  const addAll = async (count) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (next < count) {
          const i = next++;
          const id = randomBytes(8).toString("hex");
          const input = { message: `m${i}` };
          // Record and job in one round trip: both written in the same tick.
          void qc.floorEnqueue(...keys(id), JSON.stringify(input));
          await queue.add("run", { id, input }, { removeOnComplete: true });
        }
      }),
    );
  };
  target = 100;
  await addAll(100);
  await allDone;
  completed = 0;
  target = n;
  allDone = new Promise((r) => (finished = r));
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  await addAll(n);
  await allDone;
  const ms = performance.now() - t0;
  const c = process.cpuUsage(c0);
  await worker.close();
  await queue.close();
  for (const conn of connections) conn.disconnect();
  await dropPrefix(prefix);
  return { per_s: Math.round((n / ms) * 1000), node_cpu_us: Math.round((c.user + c.system) / n) };
}

const lazy = process.env.LAZY === "1";
const rounds = Number(process.env.ROUNDS ?? 5);
const runs = Number(process.env.RUNS ?? 10_000);
const concurrency = Number(process.env.CONCURRENCY ?? 16);
const ratios = [];
for (let r = 0; r < rounds; r++) {
  // Alternate which side goes first.
  const pair =
    r % 2 === 0
      ? [await rawBullmq(concurrency, runs), await floor(concurrency, runs)]
      : [null, await floor(concurrency, runs)];
  const raw = pair[0] ?? (await rawBullmq(concurrency, runs));
  const fl = pair[1];
  ratios.push(fl.per_s / raw.per_s);
  console.log(
    `round ${r + 1}: raw ${raw.per_s}/s (${raw.node_cpu_us} µs node, ${raw.redis_cpu_us} µs redis), floor ${fl.per_s}/s (${fl.node_cpu_us} µs node): ${(fl.per_s / raw.per_s).toFixed(3)}`,
  );
}
ratios.sort((a, b) => a - b);
console.log(
  `floor / raw BullMQ at concurrency ${concurrency}: median ${ratios[Math.floor(ratios.length / 2)].toFixed(3)} (${ratios[0].toFixed(3)}–${ratios.at(-1).toFixed(3)})`,
);
