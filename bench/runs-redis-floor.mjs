// The floor of a durable run store on BullMQ: raw BullMQ (runs-redis.mjs) against the same Queue and
// Worker plus the least a run record needs — one small Lua script per transition (enqueue, start,
// finish), each writing a record hash and appending one event to a per-run stream, sent in the
// same round trip as BullMQ's own command where there is one. No indexes, no fencing beyond a
// status check, no steps, no context restore: whatever a real BullMQ-based store does costs at
// least this. If this floor is below 80% of raw BullMQ, no store built on BullMQ reaches the
// target. Run: `flock /tmp/bench.lock node bench/runs-redis-floor.mjs` (ROUNDS, RUNS, CONCURRENCY).
import { randomBytes } from "node:crypto";
import { bullmqQueueAndWorker, rawBullmq } from "./runs-redis.mjs";

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

const keys = (keyOf, id) => [keyOf(id), `${keyOf(id)}:events`];

const floor = (concurrency, n) =>
  bullmqQueueAndWorker(concurrency, n, {
    prepare: scripts,
    async process(job, wc, keyOf) {
      const { id, input } = job.data;
      // LAZY=1: no start script; the finish writes the start too (a store that claims by BullMQ's
      // lock alone and records the start with the first write).
      const fence = lazy ? 0 : await wc.floorStart(...keys(keyOf, id));
      const result = "ok:" + input.message;
      // The record's finish, sent just before BullMQ's moveToFinished on the same connection.
      void wc.floorFinish(...keys(keyOf, id), String(fence), result);
      return result;
    },
    add(queue, i, qc, keyOf) {
      const id = randomBytes(8).toString("hex");
      const input = { message: `m${i}` };
      // Record and job in one round trip: both written in the same tick.
      void qc.floorEnqueue(...keys(keyOf, id), JSON.stringify(input));
      return queue.add("run", { id, input }, { removeOnComplete: true });
    },
  });

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
    `round ${r + 1}: raw ${raw.per_s}/s (${raw.node_cpu_us} µs node, ${raw.redis_cpu_us} µs redis), floor ${fl.per_s}/s (${fl.node_cpu_us} µs node, ${fl.redis_cpu_us} µs redis): ${(fl.per_s / raw.per_s).toFixed(3)}`,
  );
}
ratios.sort((a, b) => a - b);
console.log(
  `floor / raw BullMQ at concurrency ${concurrency}: median ${ratios[Math.floor(ratios.length / 2)].toFixed(3)} (${ratios[0].toFixed(3)}–${ratios.at(-1).toFixed(3)})`,
);
