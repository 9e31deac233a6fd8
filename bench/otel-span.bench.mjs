// OTel export, CPU per exported span (DESIGN §5, issue 22 §6a): @nerva/otel's sink with its
// default exporter against the official SDK path for the same spans — spans made through
// @opentelemetry/api on a BasicTracerProvider with a BatchSpanProcessor and the official OTLP
// protobuf exporter — both sending OTLP/HTTP to a receiver in another process (the collector's
// stand-in, so its CPU is not counted). Target: the sink ≤ ½ the official path's CPU per span.
//
// Each round runs REQUESTS handle() calls (RuleRouter + InProcessRuntime, one fresh context each,
// one request per turn of the event loop) three ways, in alternating order, each ended by a flush
// so that every span of the round was sent within it:
//   none      handle() without a sink (the baseline)
//   nerva     handle() with createOtelSink (default exporter)
//   official  handle() without a sink, then the same spans (names, kinds, attributes, parents,
//             events) made through the OpenTelemetry API and exported by the official path
// CPU of this process (process.cpuUsage), per span: (variant − none) / spans.
//
// Both span queues hold 2048 spans and drop past that; a flush every 1,024 spans keeps every span
// exported (`nerva_spans_dropped` must be 0).
// Run: pnpm build && node --expose-gc bench/otel-span.bench.mjs
// Env: BENCH_ROUNDS (default 7), BENCH_REQUESTS (per round, default 20000).
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { loadavg } from "node:os";
import { pathToFileURL } from "node:url";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 20_000);
const root = new URL("../", import.meta.url);
/** Imports `specifier` as packages/otel sees it (the @opentelemetry/* copies @nerva/otel uses). */
const otelDep = (specifier) =>
  import(
    pathToFileURL(createRequire(new URL("packages/otel/package.json", root)).resolve(specifier))
      .href
  );
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** A receiver in a child process: answers every POST 200 after reading its body. */
async function startReceiver() {
  const child = spawn(
    process.execPath,
    [
      "-e",
      `require("node:http").createServer((q, s) => { q.resume(); q.on("end", () => { s.writeHead(200, { "content-type": "application/x-protobuf" }); s.end(); }); }).listen(0, "127.0.0.1", function () { console.log(this.address().port); });`,
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const port = await new Promise((resolve) => child.stdout.once("data", (d) => resolve(Number(d))));
  return { url: `http://127.0.0.1:${port}/v1/traces`, stop: () => child.kill() };
}

const receiver = await startReceiver();
process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = receiver.url;
const core = await import("@nerva/core");
const { createOtelSink } = await import("@nerva/otel");
const api = await otelDep("@opentelemetry/api");
const base = await otelDep("@opentelemetry/sdk-trace-base");
const { OTLPTraceExporter } = await otelDep("@opentelemetry/exporter-trace-otlp-proto");

const runtime = new core.InProcessRuntime();
runtime.register("my_agent", async (input) => `Processed: ${input.message}`);
const orchestrator = new core.Orchestrator({
  router: new core.RuleRouter({ rules: [], defaultHandler: "my_agent" }),
  runtime,
});

// The spans one request exports, as the sink converts them: the official path makes these.
const memory = new base.InMemorySpanExporter();
const capture = createOtelSink({ spanProcessors: [new base.SimpleSpanProcessor(memory)] });
const probe = core.ExecContext.create({ userId: "u1", sessionId: "s1", traceSink: capture });
await orchestrator.handle("hello there", probe);
probe.dispose();
await capture.forceFlush();
const captured = memory.getFinishedSpans();
const SPANS = captured.length;
const ids = new Set(captured.map((s) => s.spanContext().spanId));
const depth = (s) => {
  let d = 0;
  for (let p = s; p.parentSpanContext !== undefined && ids.has(p.parentSpanContext.spanId); d++) {
    p = captured.find((c) => c.spanContext().spanId === p.parentSpanContext.spanId);
  }
  return d;
};
const plan = [...captured].sort((a, b) => depth(a) - depth(b));

const provider = new base.BasicTracerProvider({
  spanProcessors: [new base.BatchSpanProcessor(new OTLPTraceExporter({ url: receiver.url }))],
});
const tracer = provider.getTracer("bench");

/** The captured request's spans again, through the OpenTelemetry API (parents first). */
function officialSpans() {
  const made = new Map();
  const order = [];
  for (const s of plan) {
    const parent = s.parentSpanContext && made.get(s.parentSpanContext.spanId);
    const ctx =
      parent === undefined ? api.ROOT_CONTEXT : api.trace.setSpan(api.ROOT_CONTEXT, parent);
    const span = tracer.startSpan(s.name, { kind: s.kind, attributes: s.attributes }, ctx);
    for (const e of s.events) span.addEvent(e.name, e.attributes);
    made.set(s.spanContext().spanId, span);
    order.push(span);
  }
  for (let i = order.length - 1; i >= 0; i--) {
    order[i].setStatus(plan[i].status);
    order[i].end();
  }
}

const sink = createOtelSink();
const FLUSH_EVERY = 1024 / SPANS;
async function flush(variant) {
  if (variant === "nerva") await sink.forceFlush();
  if (variant === "official") await provider.forceFlush();
}
async function round(variant) {
  const options = {
    userId: "u1",
    sessionId: "s1",
    ...(variant === "nerva" ? { traceSink: sink } : {}),
  };
  const t = process.cpuUsage();
  for (let i = 0; i < REQUESTS; i++) {
    const ctx = core.ExecContext.create(options);
    await orchestrator.handle("hello there", ctx);
    ctx.dispose();
    if (variant === "official") officialSpans();
    await new Promise(setImmediate);
    // Both queues hold 2048 spans and drop past that: flushing every FLUSH_EVERY requests (1,024
    // spans) keeps every span exported on both sides, in batches near each path's own size.
    if ((i + 1) % FLUSH_EVERY === 0) await flush(variant);
  }
  await flush(variant);
  const used = process.cpuUsage(t);
  return ((used.user + used.system) * 1000) / REQUESTS; // ns per request
}

const variants = ["none", "nerva", "official"];
for (const v of variants) await round(v); // warm-up
const times = { none: [], nerva: [], official: [] };
const ratios = [];
for (let r = 0; r < ROUNDS; r++) {
  const got = {};
  for (const v of r % 2 === 0 ? variants : [...variants].reverse()) got[v] = await round(v);
  for (const v of variants) times[v].push(got[v]);
  ratios.push((got.nerva - got.none) / (got.official - got.none));
}
const perSpan = (v) => (median(times[v]) - median(times.none)) / SPANS / 1000;
const result = {
  bench: "otel-span",
  load: loadavg()[0].toFixed(2),
  spans_per_request: SPANS,
  handle_us: +(median(times.none) / 1000).toFixed(2),
  nerva_us_per_span: +perSpan("nerva").toFixed(3),
  official_us_per_span: +perSpan("official").toFixed(3),
  ratio_median: +median(ratios).toFixed(3),
  ratio_rounds: ratios.map((x) => +x.toFixed(3)),
  nerva_spans_dropped: sink.droppedSpans,
};
console.log(JSON.stringify(result));
await sink.shutdown();
await provider.shutdown();
receiver.stop();
process.exit(0);
