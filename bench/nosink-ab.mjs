// No-sink A/B (issue 13 §8, row 1): this checkout's core against another build of the core (the
// commit before trace sinks, 429f069) in ONE process, no trace sink set on either side. Each
// round runs both cores back to back, in alternating order (A B, then B A), and measures the CPU
// time of this process (process.cpuUsage: a shared machine deschedules it, that is not cost).
// Reported: the median ns per request of each side, and the median of the per-round ratios
// (paired: both halves of a round saw the same machine load).
//
// Workloads (one fresh ExecContext per request, as orchestrator.bench.mjs and runtime.bench.mjs):
//   handle   ExecContext.create + Orchestrator.handle (RuleRouter + InProcessRuntime) + dispose
//   invoke   ExecContext.create + InProcessRuntime.invoke + dispose
//
// Build the baseline core first (see BENCHMARKS.md § Tracing sinks), then:
//   NERVA_BASELINE_CORE=/tmp/nerva-base/packages/core/dist/index.js node --expose-gc bench/nosink-ab.mjs
// Env: BENCH_ROUNDS (default 101), BENCH_N (requests per half-round, default 5000: many short
// rounds; with 31 rounds of 20,000 two identical cores differed by up to 5% on a shared VM),
// BENCH_ONLY=handle|invoke.
import { loadavg } from "node:os";
import { pathToFileURL } from "node:url";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 101);
const N = Number(process.env.BENCH_N ?? 5_000);
const baselinePath = process.env.NERVA_BASELINE_CORE;
if (!baselinePath) {
  console.error("set NERVA_BASELINE_CORE to the baseline build's packages/core/dist/index.js");
  process.exit(1);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (r) => +((r - 1) * 100).toFixed(1);

function sideOf(core) {
  const runtime = new core.InProcessRuntime();
  runtime.register("my_agent", async (input) => `Processed: ${input.message}`);
  const orchestrator = new core.Orchestrator({
    router: new core.RuleRouter({ rules: [], defaultHandler: "my_agent" }),
    runtime,
  });
  return { core, runtime, orchestrator };
}

const options = { userId: "u1", sessionId: "s1" };
const input = { message: "hello there" };

const workloads = {
  async handle({ core, orchestrator }, n) {
    for (let i = 0; i < n; i++) {
      const ctx = core.ExecContext.create(options);
      await orchestrator.handle("hello there", ctx);
      ctx.dispose();
    }
  },
  async invoke({ core, runtime }, n) {
    for (let i = 0; i < n; i++) {
      const ctx = core.ExecContext.create(options);
      await runtime.invoke("my_agent", input, ctx);
      ctx.dispose();
    }
  },
};

async function cpuNs(run, side, n) {
  const t = process.cpuUsage();
  await run(side, n);
  const used = process.cpuUsage(t);
  return ((used.user + used.system) * 1000) / n;
}

// NERVA_CURRENT_CORE: another build in place of this checkout's (e.g. the baseline itself, copied
// elsewhere, to see what the harness reports for two identical cores).
const currentPath = process.env.NERVA_CURRENT_CORE;
const current = sideOf(await import(currentPath ? pathToFileURL(currentPath).href : "@nerva/core"));
const base = sideOf(await import(pathToFileURL(baselinePath).href));
const check = await current.orchestrator.handle("hello there", current.core.ExecContext.create());
if (check.text !== "Processed: hello there") throw new Error(`unexpected answer ${check.text}`);

const out = { bench: "nosink-ab", rounds: ROUNDS, n: N, loadavg_start: loadavg()[0] };
const only = process.env.BENCH_ONLY;
for (const [name, run] of Object.entries(workloads)) {
  if (only && only !== name) continue;
  await cpuNs(run, current, N); // warm-up, both sides
  await cpuNs(run, base, N);
  const cur = [];
  const bas = [];
  const ratios = [];
  for (let r = 0; r < ROUNDS; r++) {
    let c;
    let b;
    if (r % 2 === 0) {
      c = await cpuNs(run, current, N);
      b = await cpuNs(run, base, N);
    } else {
      b = await cpuNs(run, base, N);
      c = await cpuNs(run, current, N);
    }
    cur.push(c);
    bas.push(b);
    ratios.push(c / b);
  }
  out[`${name}_ns`] = +median(cur).toFixed(0);
  out[`${name}_baseline_core_ns`] = +median(bas).toFixed(0);
  out[`${name}_vs_baseline_core_pct`] = pct(median(cur) / median(bas));
  out[`${name}_paired_median_pct`] = pct(median(ratios));
  out[`${name}_paired_range_pct`] = [pct(Math.min(...ratios)), pct(Math.max(...ratios))];
  // The least disturbed half-round of each side: on a shared machine, load only adds time.
  out[`${name}_min_pct`] = pct(Math.min(...cur) / Math.min(...bas));
}
out.loadavg_end = loadavg()[0];
console.log(JSON.stringify(out));
