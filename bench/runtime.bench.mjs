// InProcessRuntime.invoke overhead vs a bare `await fn()`, heap over 1M invokes, and the
// retained size of an ExecContext. Run: pnpm bench (or: pnpm build && node --expose-gc bench/runtime.bench.mjs)
import { ExecContext, InProcessRuntime } from "@nerva/core";

if (typeof globalThis.gc !== "function") {
  console.error("run with node --expose-gc");
  process.exit(1);
}
const gc = () => {
  globalThis.gc();
  globalThis.gc();
};
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const handler = async (input) => `Processed: ${input.message}`;
const runtime = new InProcessRuntime().register("my_agent", handler);
const input = { message: "hello" };
const CALLS_PER_REQUEST = 100;

async function bare(n) {
  const ctx = ExecContext.create({ userId: "u" });
  const t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await handler(input, ctx);
  return Number(process.hrtime.bigint() - t) / n;
}

async function invoke(n) {
  let ctx = ExecContext.create({ userId: "u" });
  const t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    // One context per "request" of CALLS_PER_REQUEST invokes, as a server would have.
    if (i % CALLS_PER_REQUEST === 0) ctx = ExecContext.create({ userId: "u" });
    await runtime.invoke("my_agent", input, ctx);
  }
  return Number(process.hrtime.bigint() - t) / n;
}

async function perRequest(n) {
  const t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const ctx = ExecContext.create({ userId: "u", sessionId: "s", timeoutSeconds: 30 });
    await runtime.invoke("my_agent", input, ctx);
    ctx.dispose();
  }
  return Number(process.hrtime.bigint() - t) / n;
}

// Warm up the JIT on both paths.
await bare(200_000);
await invoke(200_000);
await perRequest(50_000);

const rounds = 7;
const n = 200_000;
const bareNs = [];
const invokeNs = [];
for (let r = 0; r < rounds; r++) {
  bareNs.push(await bare(n));
  invokeNs.push(await invoke(n));
}
const perRequestNs = [];
for (let r = 0; r < 3; r++) perRequestNs.push(await perRequest(n));

// Heap flatness: heap after GC at 100k invokes vs after 1M invokes.
gc();
const heapStart = process.memoryUsage().heapUsed;
await invoke(100_000);
gc();
const heapAt100k = process.memoryUsage().heapUsed;
await invoke(900_000);
gc();
const heapAt1M = process.memoryUsage().heapUsed;

// Retained size of a root ExecContext as a bridge creates it.
const N = 100_000;
gc();
const before = process.memoryUsage().heapUsed;
const keep = new Array(N);
for (let i = 0; i < N; i++) {
  keep[i] = ExecContext.create({
    userId: `user-${i % 1000}`,
    sessionId: "session-abc",
    timeoutSeconds: 30,
  });
}
gc();
const ctxBytes = (process.memoryUsage().heapUsed - before) / N;
// The same context after a handler ran in it (spans recorded, signal created).
const used = keep.slice(0, 10_000);
gc();
const beforeUse = process.memoryUsage().heapUsed;
for (const c of used) {
  await runtime.invoke("my_agent", input, c);
  void c.signal;
  c.dispose();
}
gc();
const usedExtraBytes = (process.memoryUsage().heapUsed - beforeUse) / used.length;
keep.length = 0;

const result = {
  bench: "runtime",
  bare_await_ns: +median(bareNs).toFixed(1),
  invoke_ns: +median(invokeNs).toFixed(1),
  invoke_added_ns: +(median(invokeNs) - median(bareNs)).toFixed(1),
  invoke_ratio: +(median(invokeNs) / median(bareNs)).toFixed(2),
  request_create_invoke_dispose_ns: +median(perRequestNs).toFixed(1),
  heap_growth_100k_to_1M_bytes: heapAt1M - heapAt100k,
  heap_start_mb: +(heapStart / 1e6).toFixed(2),
  heap_at_1M_mb: +(heapAt1M / 1e6).toFixed(2),
  exec_context_retained_bytes: +ctxBytes.toFixed(0),
  exec_context_after_one_invoke_extra_bytes: +usedExtraBytes.toFixed(0),
};
console.log(JSON.stringify(result));
