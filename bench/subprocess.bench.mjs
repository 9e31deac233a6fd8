// SubprocessRuntime overheads (DESIGN §5), against the built package:
// 1. a warm-pool invoke of a trivial Node module handler vs InProcessRuntime.invoke of the same
//    function (target: ≤ 1 ms added at the median);
// 2. an executable handler per call vs a raw child_process.spawn of the same program with the
//    same stdin (target: ≤ 0.5 ms added at the median).
// Calls alternate between the sides of each comparison so machine noise hits them alike. The
// executable comparison also reports a raw spawn with `detached: true` (what the runtime does to
// give each call its own process group, so a kill takes grandchildren too): on Linux kernels with
// sched_autogroup the setsid() it implies has a cost of its own, which this separates from the
// runtime's. It also runs the executable with `confinement: "none"`, to show what confinement
// adds (in the namespace modes executables run on fork servers: a perl init in prepared
// namespaces that forks each call's program, docs/subprocess-runtime.md#confinement; the first
// call of a runtime, before a server is up, starts its own init and is part of the warm-up).
// The load average at the start and the end is part of the output: figures from a loaded
// machine are not comparable with figures from an idle one.
// Run: pnpm --filter @nerva/core build && node bench/subprocess.bench.mjs   (or: pnpm bench subprocess)
import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { ExecContext, InProcessRuntime } from "@nerva/core";
import { SubprocessRuntime } from "@nerva/core/subprocess";

const MODULE_CALLS = Number(process.env.MODULE_CALLS ?? 4000);
const EXEC_CALLS = Number(process.env.EXEC_CALLS ?? 400);
const WARMUP = 50;

const sorted = (xs) => [...xs].sort((a, b) => a - b);
const pct = (xs, p) => sorted(xs)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];
const stats = (xs) => ({ median_ms: +pct(xs, 50).toFixed(4), p99_ms: +pct(xs, 99).toFixed(4) });
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;

const dir = mkdtempSync(join(tmpdir(), "nerva-bench-subprocess-"));
const handlerSource = "async (input) => `Processed: ${input.message}`";
writeFileSync(join(dir, "trivial.mjs"), `export default ${handlerSource};\n`);
// The executable: a POSIX shell script that reads its input and prints a JSON result.
const exe = join(dir, "trivial_exe");
writeFileSync(exe, '#!/bin/sh\nIFS= read -r line\nprintf \'{"output":"ok"}\\n\'\n');
chmodSync(exe, 0o755);

const input = { message: "hello" };
const handler = new Function(`return ${handlerSource}`)();
const inProcess = new InProcessRuntime().register("trivial", handler);
const subprocess = new SubprocessRuntime({
  handlerDir: dir,
  pool: { min: 1, max: 1 },
  maxInvocationsPerWorker: 1_000_000,
});
// The same runtime without confinement (no user/PID namespace, no init): what confinement costs.
const unconfined = new SubprocessRuntime({
  handlerDir: dir,
  pool: { min: 0, max: 1 },
  confinement: "none",
});

async function check(result, expected) {
  if (result.status !== "success" || result.output !== expected) {
    throw new Error(`unexpected result: ${JSON.stringify(result)}`);
  }
}

async function timeInvoke(runtime, name, expected) {
  const ctx = ExecContext.create({ userId: "bench" });
  const t0 = process.hrtime.bigint();
  const result = await runtime.invoke(name, input, ctx);
  const elapsed = ms(t0);
  ctx.dispose();
  await check(result, expected);
  return elapsed;
}

/** What a user would write without Nerva: spawn, feed stdin, collect stdout, wait for close. */
function rawSpawn(detached = false) {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const child = spawn(exe, [], { stdio: ["pipe", "pipe", "pipe"], detached });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.resume();
    child.on("error", reject);
    child.on("close", (code) => {
      const elapsed = ms(t0);
      if (code !== 0 || JSON.parse(out).output !== "ok")
        reject(new Error(`raw spawn: ${code} ${out}`));
      else resolve(elapsed);
    });
    child.stdin.end(JSON.stringify({ message: "hello", args: {}, tools: [], history: [] }));
  });
}

const loadAtStart = loadavg().map((x) => +x.toFixed(2));
try {
  await subprocess.warmUp();
  const expected = "Processed: hello";

  // 1. warm module handler vs in-process
  for (let i = 0; i < WARMUP * 10; i++) {
    await timeInvoke(inProcess, "trivial", expected);
    await timeInvoke(subprocess, "trivial", expected);
  }
  const inProc = [];
  const warm = [];
  for (let i = 0; i < MODULE_CALLS; i++) {
    inProc.push(await timeInvoke(inProcess, "trivial", expected));
    warm.push(await timeInvoke(subprocess, "trivial", expected));
  }

  // 2. executable per call vs raw spawn
  for (let i = 0; i < WARMUP; i++) {
    await rawSpawn();
    await timeInvoke(subprocess, "trivial_exe", "ok");
  }
  const raw = [];
  const rawDetached = [];
  const perCall = [];
  const perCallUnconfined = [];
  for (let i = 0; i < EXEC_CALLS; i++) {
    raw.push(await rawSpawn());
    rawDetached.push(await rawSpawn(true));
    perCall.push(await timeInvoke(subprocess, "trivial_exe", "ok"));
    perCallUnconfined.push(await timeInvoke(unconfined, "trivial_exe", "ok"));
  }

  const w = stats(warm);
  const ip = stats(inProc);
  const r = stats(raw);
  const rd = stats(rawDetached);
  const e = stats(perCall);
  const u = stats(perCallUnconfined);
  const warmAdded = +(w.median_ms - ip.median_ms).toFixed(4);
  const execAdded = +(e.median_ms - r.median_ms).toFixed(4);
  const workers = subprocess.stats().pool;
  console.log(
    JSON.stringify({
      bench: "subprocess",
      node: process.version,
      cpus: cpus().length,
      load_average: { start: loadAtStart, end: loadavg().map((x) => +x.toFixed(2)) },
      warm_module_vs_in_process: {
        calls: MODULE_CALLS,
        in_process: ip,
        warm_subprocess: w,
        added_median_ms: warmAdded,
        added_p99_ms: +(w.p99_ms - ip.p99_ms).toFixed(4),
        target_added_median_ms: 1,
        meets_target: warmAdded <= 1,
        workers_started: workers.started,
      },
      executable_vs_raw_spawn: {
        calls: EXEC_CALLS,
        confinement: subprocess.confinement,
        raw_spawn: r,
        raw_spawn_detached: rd,
        runtime_per_call: e,
        runtime_per_call_unconfined: u,
        confinement_added_median_ms: +(e.median_ms - u.median_ms).toFixed(4),
        unconfined_added_median_ms: +(u.median_ms - r.median_ms).toFixed(4),
        added_median_ms: execAdded,
        added_over_detached_spawn_median_ms: +(e.median_ms - rd.median_ms).toFixed(4),
        added_p99_ms: +(e.p99_ms - r.p99_ms).toFixed(4),
        ratio_median: +(e.median_ms / r.median_ms).toFixed(3),
        target_added_median_ms: 0.5,
        meets_target: execAdded <= 0.5,
      },
    }),
  );
} finally {
  await subprocess.close();
  await unconfined.close();
  rmSync(dir, { recursive: true, force: true });
}
