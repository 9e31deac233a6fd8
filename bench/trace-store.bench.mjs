// TraceStore, the trace viewer's sink: what it adds to Orchestrator.handle (RuleRouter +
// InProcessRuntime, trivial handler, five spans per request) against the same handle() with no
// sink, interleaved in the same run; a no-op sink for reference. Also: the heap a full store keeps
// (200 traces), and what the viewer's reads cost on it (the list, one trace).
// Run: pnpm --filter @nerva/core build && node --expose-gc bench/trace-store.bench.mjs
import { ExecContext, InProcessRuntime, Orchestrator, RuleRouter } from "@nerva/core";
import { TraceStore } from "@nerva/core/tracing";

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const spread = (xs) => `${Math.min(...xs).toFixed(0)}-${Math.max(...xs).toFixed(0)}`;

const runtime = new InProcessRuntime();
runtime.register("my_agent", async (input) => `Processed: ${input.message}`);
const orchestrator = new Orchestrator({
  router: new RuleRouter({ rules: [], defaultHandler: "my_agent" }),
  runtime,
});
const message = "hello there";
const store = new TraceStore({ maxTraces: 200 });
const noop = { onSpanEnd() {} };

async function handle(traceSink, n) {
  const options = traceSink === null ? { userId: "u1" } : { userId: "u1", traceSink };
  const t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const ctx = ExecContext.create(options);
    await orchestrator.handle(message, ctx);
    ctx.dispose();
  }
  return Number(process.hrtime.bigint() - t) / n;
}

// Sanity: the store really keeps the requests, whole.
await handle(store, 1);
const [first] = store.traces();
if (first?.rootName !== "handle" || first.spanCount < 4) throw new Error("the store kept nothing");

for (const sink of [null, noop, store]) await handle(sink, 50_000); // JIT warm-up

const rounds = 9;
const n = 50_000;
const bare = [];
const withNoop = [];
const withStore = [];
for (let r = 0; r < rounds; r++) {
  bare.push(await handle(null, n));
  withNoop.push(await handle(noop, n));
  withStore.push(await handle(store, n));
}

// Heap a full store keeps: filled with 200 traces, against the same store emptied.
const heap = () => {
  globalThis.gc();
  globalThis.gc();
  return process.memoryUsage().heapUsed;
};
await handle(store, 1_000);
const full = heap();
store.clear();
const empty = heap();
await handle(store, 1_000);

// The viewer's reads on a full store.
const reads = (fn, count) => {
  const t = process.hrtime.bigint();
  for (let i = 0; i < count; i++) fn();
  return Number(process.hrtime.bigint() - t) / count;
};
const id = store.traces({ limit: 1 })[0].traceId;
const listNs = median(Array.from({ length: 5 }, () => reads(() => store.traces(), 200)));
const traceNs = median(Array.from({ length: 5 }, () => reads(() => store.trace(id), 20_000)));

console.log(
  JSON.stringify({
    bench: "trace-store",
    handle_no_sink_ns: +median(bare).toFixed(1),
    handle_noop_sink_ns: +median(withNoop).toFixed(1),
    handle_trace_store_ns: +median(withStore).toFixed(1),
    noop_ratio: +(median(withNoop) / median(bare)).toFixed(3),
    trace_store_ratio: +(median(withStore) / median(bare)).toFixed(3),
    trace_store_added_ns: +(median(withStore) - median(bare)).toFixed(1),
    spread_ns: { none: spread(bare), noop: spread(withNoop), store: spread(withStore) },
    spans_per_request: first.spanCount,
    full_store_bytes_per_trace: Math.round((full - empty) / 200),
    read_list_200_us: +(listNs / 1000).toFixed(1),
    read_trace_us: +(traceNs / 1000).toFixed(2),
  }),
);
await runtime.close();
