// Issue 23 §4, side by side: raw BullMQ against RedisRunStore, each side in a fresh process
// (bench/runs-redis.profile.mjs), ROUNDS rounds (8) of RUNS runs (5000) at CONCURRENCY (16), the
// order of the sides rotated each round, ratios taken against the raw side of the same round.
// BEFORE=<checkout> adds a side: the same bench run from another checkout (its own
// packages/core/dist), e.g. a worktree of an earlier commit, for a before/after. SERIAL=1 adds
// a side that reads the runs back one after another (WAIT=serial in runs-redis.mjs).
//
//   redis-server --port 6390 --save "" --appendonly no --daemonize yes
//   pnpm build && NERVA_REDIS_URL=redis://127.0.0.1:6390 node bench/runs-redis-rounds.mjs
//
// Use a Redis server of your own: its CPU (INFO) is read as the run's cost.
import { execFileSync } from "node:child_process";
import { loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const rounds = Number(process.env.ROUNDS ?? 8);
const runs = Number(process.env.RUNS ?? 5000);
const before = process.env.BEFORE;
const sides = [
  { name: "raw", script: join(here, "runs-redis.profile.mjs"), side: "raw" },
  { name: "store", script: join(here, "runs-redis.profile.mjs"), side: "nerva" },
  ...(before === undefined
    ? []
    : [{ name: "before", script: join(before, "bench/runs-redis.profile.mjs"), side: "nerva" }]),
  ...(process.env.SERIAL === "1"
    ? [
        {
          name: "serial",
          script: join(here, "runs-redis.profile.mjs"),
          side: "nerva",
          wait: "serial",
        },
      ]
    : []),
];

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const range = (xs) => `${Math.min(...xs)}–${Math.max(...xs)}`;
const results = Object.fromEntries(sides.map((s) => [s.name, []]));
const loads = [];
for (let r = 0; r < rounds; r++) {
  loads.push(loadavg()[0]);
  const order = sides.map((_, i) => sides[(i + r) % sides.length]);
  for (const s of order) {
    const out = execFileSync(process.execPath, [s.script], {
      env: { ...process.env, SIDE: s.side, RUNS: String(runs), WAIT: s.wait ?? "" },
      cwd: dirname(dirname(s.script)),
      encoding: "utf8",
    });
    results[s.name].push(JSON.parse(out.trim().split("\n").at(-1)));
  }
  const raw = results.raw[r];
  const line = sides
    .filter((s) => s.name !== "raw")
    .map((s) => {
      const m = results[s.name][r];
      return `${s.name} ${(m.redis_cpu_us / raw.redis_cpu_us).toFixed(2)}× Redis CPU, ${(m.per_s / raw.per_s).toFixed(2)} of jobs/s`;
    })
    .join("; ");
  console.log(
    `round ${r + 1}: raw ${raw.per_s}/s, ${raw.redis_cpu_us} µs Redis, ${raw.node_cpu_us} µs Node; ${line}`,
  );
}

const summary = { rounds, runs, load: range(loads.map((l) => +l.toFixed(1))) };
for (const s of sides) {
  const ms = results[s.name];
  const ratios = ms.map((m, r) => ({
    redis: m.redis_cpu_us / results.raw[r].redis_cpu_us,
    jobs: m.per_s / results.raw[r].per_s,
  }));
  summary[s.name] = {
    per_s: median(ms.map((m) => m.per_s)),
    redis_cpu_us: median(ms.map((m) => m.redis_cpu_us)),
    node_cpu_us: median(ms.map((m) => m.node_cpu_us)),
    ...(s.name === "raw"
      ? {}
      : {
          redis_cpu_vs_raw: +median(ratios.map((x) => x.redis)).toFixed(2),
          redis_cpu_vs_raw_range: range(ratios.map((x) => +x.redis.toFixed(2))),
          jobs_per_s_vs_raw: +median(ratios.map((x) => x.jobs)).toFixed(3),
          jobs_per_s_vs_raw_range: range(ratios.map((x) => +x.jobs.toFixed(2))),
        }),
  };
}
console.log(JSON.stringify(summary, null, 1));
const store = summary.store;
console.log(
  `targets: Redis CPU per run ≤ 2× raw: ${store.redis_cpu_vs_raw}× (${store.redis_cpu_vs_raw <= 2 ? "met" : "NOT met"}); jobs/s ≥ 0.5 of raw: ${store.jobs_per_s_vs_raw} (${store.jobs_per_s_vs_raw >= 0.5 ? "met" : "NOT met"})`,
);
