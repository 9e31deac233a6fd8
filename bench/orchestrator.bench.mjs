// Orchestrator.handle overhead (RuleRouter + InProcessRuntime) vs a bare runtime.invoke of the
// same handler, one fresh ExecContext per request on both sides; plus, for information, handle()
// with memory, registry, policy and two middleware configured (all in-memory). Also for
// information: the same two paths with a 4 MiB memory sweep between requests (not timed), which
// leaves the CPU caches cold the way a web framework's own work does in a server.
// Run: pnpm --filter @nerva/core build && node --expose-gc bench/orchestrator.bench.mjs
import { DeclarativePolicyEngine } from "@nerva/core/policy";
import { ExecContext, InProcessRuntime, Orchestrator, RuleRouter } from "@nerva/core";
import { InMemoryRegistry } from "@nerva/core/registry";
import { MetricsMiddleware, InputSizeLimitMiddleware } from "@nerva/core/middleware";
import { TieredMemory } from "@nerva/core/memory";

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const runtime = new InProcessRuntime();
runtime.register("my_agent", async (input) => `Processed: ${input.message}`);
runtime.register("other_agent", async () => "other");
const router = new RuleRouter({
  rules: [
    { handler: "other_agent", keywords: ["weather", "forecast"] },
    { handler: "my_agent", pattern: "^hello\\b" },
  ],
  defaultHandler: "my_agent",
});
const orchestrator = new Orchestrator({ router, runtime });
const full = new Orchestrator({
  router,
  runtime,
  memory: new TieredMemory({ hotTurns: 10 }),
  registry: new InMemoryRegistry(),
  policy: new DeclarativePolicyEngine({
    version: 1,
    rateLimits: [{ name: "per-user", per: "user", limit: 1_000_000_000, windowSeconds: 1 }],
    budgets: [{ name: "request", per: "request", maxTokens: 100_000 }],
  }),
  middleware: [new InputSizeLimitMiddleware(), new MetricsMiddleware()],
});
const message = "hello there";
const input = { message };
const options = { userId: "u1", sessionId: "s1" };

async function bareInvoke(n) {
  const t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const ctx = ExecContext.create(options);
    await runtime.invoke("my_agent", input, ctx);
    ctx.dispose();
  }
  return Number(process.hrtime.bigint() - t) / n;
}

async function handle(o, n) {
  const t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const ctx = ExecContext.create(options);
    await o.handle(message, ctx);
    ctx.dispose();
  }
  return Number(process.hrtime.bigint() - t) / n;
}

/** Per-request ns of `run()` with `sweep` (4 MiB) touched between requests, outside the timing. */
const sweep = new Uint8Array(4 * 1024 * 1024);
let swept = 0;
async function cold(run, n) {
  let total = 0n;
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < sweep.length; j += 64) swept += sweep[j]++;
    const t = process.hrtime.bigint();
    await run();
    total += process.hrtime.bigint() - t;
  }
  return Number(total) / n;
}
const coldBare = () => {
  const ctx = ExecContext.create(options);
  return runtime.invoke("my_agent", input, ctx).finally(() => ctx.dispose());
};
const coldHandle = () => {
  const ctx = ExecContext.create(options);
  return orchestrator.handle(message, ctx).finally(() => ctx.dispose());
};

// Sanity: the benchmarked paths really answer.
const check = await orchestrator.handle(message, ExecContext.create(options));
if (check.text !== "Processed: hello there") throw new Error(`unexpected answer ${check.text}`);
const checkFull = await full.handle(message, ExecContext.create(options));
if (checkFull.status !== "success") throw new Error(`unexpected status ${checkFull.status}`);

// Warm up the JIT on every path.
await bareInvoke(100_000);
await handle(orchestrator, 100_000);
await handle(full, 20_000);

const rounds = 7;
const n = 100_000;
const bareNs = [];
const handleNs = [];
const fullNs = [];
for (let r = 0; r < rounds; r++) {
  bareNs.push(await bareInvoke(n));
  handleNs.push(await handle(orchestrator, n));
  fullNs.push(await handle(full, n / 5));
}
const coldBareNs = [];
const coldHandleNs = [];
for (let r = 0; r < rounds; r++) {
  coldBareNs.push(await cold(coldBare, 5_000));
  coldHandleNs.push(await cold(coldHandle, 5_000));
}

const result = {
  bench: "orchestrator",
  bare_invoke_ns: +median(bareNs).toFixed(1),
  handle_ns: +median(handleNs).toFixed(1),
  handle_added_ns: +(median(handleNs) - median(bareNs)).toFixed(1),
  handle_ratio: +(median(handleNs) / median(bareNs)).toFixed(2),
  handle_full_stack_ns: +median(fullNs).toFixed(1),
  handle_full_stack_added_ns: +(median(fullNs) - median(bareNs)).toFixed(1),
  cold_bare_invoke_ns: +median(coldBareNs).toFixed(1),
  cold_handle_ns: +median(coldHandleNs).toFixed(1),
  cold_handle_added_ns: +(median(coldHandleNs) - median(coldBareNs)).toFixed(1),
};
// Reading the sweep's sum keeps the sweep from being optimised away.
if (swept === 0) throw new Error("the cache sweep did not run");
console.log(JSON.stringify(result));
