// ContainerRuntime: a warm container invoke vs a per-call `docker run` of the same image and the
// same trivial Node handler (the baseline), plus the runtime's own per-call mode for reference.
// Needs a Docker engine and the test image: .ci/docker.sh (as root) provides both.
// Run: pnpm bench container (or: pnpm build && node --expose-gc bench/container.bench.mjs)
import { execFileSync, spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ExecContext } from "@nerva/core";
import { ContainerRuntime } from "@nerva/core/container";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
let image;
try {
  image = execFileSync("bash", [join(root, ".ci/docker.sh"), "--image"], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  })
    .trim()
    .split("\n")
    .pop();
} catch {
  console.error("container bench: no Docker engine or test image (run .ci/docker.sh as root)");
  process.exit(1);
}

const WARM_CALLS = Number(process.env.WARM_CALLS ?? 500);
const COLD_CALLS = Number(process.env.COLD_CALLS ?? 30);
const input = { message: "hello" };

const sorted = (xs) => [...xs].sort((a, b) => a - b);
const pct = (xs, p) => sorted(xs)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];
const stats = (xs) => ({ median_ms: +pct(xs, 50).toFixed(3), p99_ms: +pct(xs, 99).toFixed(3) });

/** One `docker run --rm -i` of the image's stdio echo handler, input on stdin, as a user would. */
function dockerRun() {
  return new Promise((resolve, reject) => {
    const child = spawn(
      "docker",
      [
        "run",
        "--rm",
        "-i",
        "--network",
        "none",
        "--memory",
        "256m",
        image,
        "node",
        "/handlers/echo.mjs",
      ],
      { stdio: ["pipe", "pipe", "inherit"] },
    );
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0 && out === "echo: hello"
        ? resolve()
        : reject(new Error(`docker run: ${code} ${out}`)),
    );
    child.stdin.end(JSON.stringify(input));
  });
}

async function time(n, fn) {
  const ms = [];
  for (let i = 0; i < n; i++) {
    const t = process.hrtime.bigint();
    await fn();
    ms.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  return ms;
}

const runtime = new ContainerRuntime({ timeoutSeconds: 60, circuitBreaker: false });
runtime.register("warm_echo", { image, module: "/modules/echo.mjs", mode: "warm" });
runtime.register("per_call_echo", { image, command: ["node", "/handlers/echo.mjs"] });
try {
  await runtime.start();
  const check = async (name) => {
    const ctx = ExecContext.create();
    const result = await runtime.invoke(name, input, ctx);
    ctx.dispose();
    if (result.output !== "echo: hello") throw new Error(`${name}: ${JSON.stringify(result)}`);
  };
  // Warm-up: JIT on the host side, the agent's module cache, the engine's caches.
  for (let i = 0; i < 50; i++) await check("warm_echo");
  await check("per_call_echo");
  await dockerRun();

  const warm = await time(WARM_CALLS, () => check("warm_echo"));
  const cold = await time(COLD_CALLS, dockerRun);
  const perCall = await time(COLD_CALLS, () => check("per_call_echo"));

  const result = {
    bench: "container",
    image,
    warm_calls: WARM_CALLS,
    cold_calls: COLD_CALLS,
    warm_invoke: stats(warm),
    docker_run_baseline: stats(cold),
    runtime_per_call: stats(perCall),
    warm_vs_docker_run_median_speedup: +(pct(cold, 50) / pct(warm, 50)).toFixed(1),
    runtime_per_call_vs_docker_run_median_ratio: +(pct(perCall, 50) / pct(cold, 50)).toFixed(2),
  };
  console.log(JSON.stringify(result));
} finally {
  await runtime.close();
}
