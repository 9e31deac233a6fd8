// A/B of HTTP bridge servers: the same route in two (or more) configurations, alternated round by
// round, measured as server CPU per request (the figure that other load on a shared machine moves
// least) and req/s. Each configuration is framework:variant[:NAME=value,...] with the variants of
// http.bench.mjs and its server environment variables, e.g. an older build of @nerva/nestjs (kept
// inside packages/nestjs, where its imports resolve):
//   git show <commit>:packages/nestjs/src/nerva-ctx.decorator.ts > packages/nestjs/src/nerva-ctx.decorator.ts
//   pnpm --filter @nerva/nestjs build && cp -r packages/nestjs/dist packages/nestjs/dist-old
//   git checkout HEAD -- packages/nestjs/src && pnpm --filter @nerva/nestjs build
//   node bench/http-ab.mjs 4 7 nestjs-fastify:bare-handle \
//     nestjs-fastify:bridge:BENCH_NESTJS_DIST=packages/nestjs/dist-old nestjs-fastify:bridge
// Arguments: seconds per run, rounds, configurations. Servers run on CPU 1 (taskset), as in
// http.bench.mjs, when taskset exists.
import { execFileSync, spawn } from "node:child_process";
import { loadavg } from "node:os";
import { fileURLToPath } from "node:url";

const bench = fileURLToPath(new URL("./http.bench.mjs", import.meta.url));
const [seconds, rounds, ...configs] = process.argv.slice(2);
if (configs.length < 2) {
  console.error("usage: node bench/http-ab.mjs <seconds> <rounds> <config> <config> [...]");
  process.exit(2);
}
let pinned = true;
try {
  execFileSync("taskset", ["-a", "-cp", "0", String(process.pid)], { stdio: "ignore" });
} catch {
  pinned = false;
}

async function start(config) {
  const [framework, variant, settings = ""] = config.split(":");
  const env = { ...process.env, NODE_ENV: "production" };
  for (const pair of settings.split(",").filter(Boolean)) {
    const at = pair.indexOf("=");
    env[pair.slice(0, at)] = pair.slice(at + 1);
  }
  const command = [process.execPath, bench, "--serve", framework, variant];
  if (pinned) command.unshift("taskset", "-c", "1");
  const child = spawn(command[0], command.slice(1), {
    stdio: ["ignore", "pipe", "inherit", "ipc"],
    env,
  });
  const port = await new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
      const line = out.split("\n").find((l) => l.startsWith("{"));
      if (line !== undefined) resolve(JSON.parse(line).port);
    });
    child.once("exit", (code) => reject(new Error(`${config}: server exited ${code}`)));
  });
  return { config, child, port };
}

const cpuOf = (child) =>
  new Promise((resolve) => {
    child.once("message", (u) => resolve(u.user + u.system));
    child.send("cpu");
  });

async function load(port, duration) {
  const { default: autocannon } = await import("autocannon");
  const result = await autocannon({
    url: `http://127.0.0.1:${port}/chat`,
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ message: "Book me a flight" }),
    connections: 50,
    duration,
  });
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`port ${port}: failed requests`);
  return result;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const servers = [];
try {
  for (const config of configs) servers.push(await start(config));
  for (const s of servers) await load(s.port, 2);
  const runs = new Map(configs.map((c) => [c, { cpu: [], rps: [] }]));
  const loadAtStart = loadavg()[0];
  for (let r = 0; r < Number(rounds); r++) {
    // Alternate the order too, so that a drift in the machine's load hits every side alike.
    for (const s of r % 2 === 0 ? servers : [...servers].reverse()) {
      const before = await cpuOf(s.child);
      const result = await load(s.port, Number(seconds));
      const after = await cpuOf(s.child);
      const run = runs.get(s.config);
      run.cpu.push((after - before) / result.requests.total);
      run.rps.push(result.requests.average);
    }
  }
  const out = { bench: "http-ab", pinned, load_average: [loadAtStart, loadavg()[0]], configs: {} };
  for (const [config, run] of runs) {
    out.configs[config] = {
      cpu_us_per_request: +median(run.cpu).toFixed(1),
      cpu_rounds: run.cpu.map((x) => +x.toFixed(1)),
      rps: Math.round(median(run.rps)),
    };
  }
  console.log(JSON.stringify(out));
} finally {
  for (const s of servers) s.child.kill("SIGKILL");
}
