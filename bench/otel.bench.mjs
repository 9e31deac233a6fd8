// Tracing sinks (issue 13 §8): what a trace sink adds to Orchestrator.handle() (RuleRouter +
// InProcessRuntime, one fresh ExecContext per request, four spans), and what @nerva/otel adds to
// a whole HTTP request when it really exports. Times are CPU time of this process (a machine
// shared with other work deschedules it; that is not cost), medians of alternating rounds.
//
// In process, one request per turn of the event loop (as a server handles them; the sink's batch
// queue is drained on a later turn, and that work is counted too):
//   none           handle() without a sink (the baseline of every ratio)
//   noop           a sink whose onSpanEnd does nothing                          target ≤ +5%
//   otel           createOtelSink with an exporter that only acknowledges: everything but the
//                  conversion and serialisation the export does ("export deferred")  ≤ +15%
//   otel_convert   the same, the exporter reading every field of every span (the conversion an
//                  OTLP export does before serialising): information
//   als_*          none and otel again with OpenTelemetry's AsyncLocalStorage context manager
//                  registered, as NodeSDK does (runInSpan then really switches contexts)
// With NERVA_BASELINE_CORE=<another build's packages/core/dist/index.js> (e.g. the commit before
// the trace sinks), `base` and `none` run back to back in a tight loop (no turn per request, as
// bench/orchestrator.bench.mjs): the no-sink row, target ±3%.
//
// Over HTTP (servers pinned to CPU 1, autocannon on CPU 0, as in http.bench.mjs): Fastify and
// Express POST /chat through the bridge and handle(), sink off vs @nerva/otel exporting OTLP/HTTP
// protobuf; server CPU µs per request, target ≤ +15%. The sink uses its default exporter
// (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT). The receiver (a node:http server on 127.0.0.1:0, the
// collector's stand-in) runs in THIS process, beside autocannon: a collector runs outside the
// app, so the server's CPU counts what the sink costs it (conversion, encoding, the batch queue,
// the HTTP client's send, GC) and not the collector's accepting and reading of each batch.
// `otel_receiver_in_server` (always reported, information) is the same sink with the receiver in
// the server's process, the placement before session 5's split. BENCH_HTTP_SPLIT=1 adds a sink
// that converts but sends nothing, and one given the official OTLP proto exporter.
// BENCH_SERVER_ARGS="--cpu-prof --cpu-prof-dir=..." passes node flags to the servers (which then
// exit normally, so that a profile is written).
//
// Each HTTP figure is the median of paired per-round ratios: BENCH_GENERATIONS (default 3) sets
// of fresh servers, each warmed and then measured in BENCH_ROUNDS_PER_GENERATION (default 5)
// rounds that alternate the variants' order; each round of a variant is paired with the `off`
// round beside it. Reported as [min, q1, median, q3, max].
//
// BENCH_WORK=model: every request does real work instead (a model agent asking the local fake
// OpenAI server, which runs in the bench process, for one tool call and then the answer): the
// +5% row on a request of realistic weight (issue 22 §6b).
//
// Run: pnpm build && node --expose-gc bench/run.mjs otel
// Env: BENCH_ROUNDS (in-process rounds, default 7), BENCH_DURATION (s per HTTP round, default 3),
// BENCH_HTTP=0 (skip), BENCH_IN_PROCESS=0 (skip), BENCH_IN_PROCESS_EXPORT=1 (in process, the
// default exporter sending to a receiver here: all spans against `spans: "genai"`),
// BENCH_FRAMEWORKS (default fastify,express),
// BENCH_RATE (requests/s: a fixed arrival rate instead of as fast as autocannon goes),
// BENCH_RECEIVER_IN_SERVER=0 (skip that row), BENCH_HTTP_STEPS=1 (noop, otel_queue, otel_encode:
// the steps from off to otel), BENCH_HTTP_EXTRA (more variants by name, e.g. otel_genai: the
// default exporter with `spans: "genai"`), NERVA_BASELINE_CORE.
import { execFileSync, spawn } from "node:child_process";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { availableParallelism } from "node:os";
import { fileURLToPath, pathToFileURL } from "node:url";

const self = fileURLToPath(import.meta.url);
const root = new URL("../", import.meta.url);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const DURATION_SECONDS = Number(process.env.BENCH_DURATION ?? 3);
const N = 50_000;
const RATE = Number(process.env.BENCH_RATE ?? 0);

/** Imports `specifier` as packages/<pkg> sees it (@opentelemetry/* are @nerva/otel's). */
const from = (pkg, specifier) =>
  import(
    pathToFileURL(createRequire(new URL(`packages/${pkg}/package.json`, root)).resolve(specifier))
      .href
  );

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (a, b) => +((a / b - 1) * 100).toFixed(1);

/** An exporter that only acknowledges, or (`read`) also reads every field the OTLP encoder reads. */
function exporterOf(read) {
  let sink = 0;
  return {
    export(spans, done) {
      if (read) {
        for (const s of spans) {
          const sc = s.spanContext();
          sink += s.name.length + Object.keys(s.attributes).length + s.events.length + s.kind;
          sink += s.startTime[1] + s.endTime[1] + s.status.code + sc.spanId.length;
          sink += (s.parentSpanContext?.spanId.length ?? 0) + s.duration[1];
        }
      }
      done({ code: 0 });
    },
    shutdown: async () => {
      if (sink === -1) console.error("unreachable");
    },
  };
}

function orchestratorOf(core) {
  const runtime = new core.InProcessRuntime();
  runtime.register("my_agent", async (input) => `Processed: ${input.message}`);
  return new core.Orchestrator({
    router: new core.RuleRouter({ rules: [], defaultHandler: "my_agent" }),
    runtime,
  });
}

/**
 * BENCH_WORK=model: a request doing real work, as a chat route does — a model agent asking the
 * local fake OpenAI server (BENCH_FAKE_OPENAI_URL, in the bench process), which answers with one
 * tool call, then with the final text after the tool's result.
 */
async function modelOrchestrator(core) {
  const { z } = await import("zod");
  const { createOpenAICompatible } = await import("@ai-sdk/openai-compatible");
  const { createModel, modelAgent } = await import("@nerva/ai-sdk");
  const provider = createOpenAICompatible({
    name: "fake",
    baseURL: process.env.BENCH_FAKE_OPENAI_URL,
    includeUsage: true,
  });
  const tools = new core.FunctionToolManager().register(
    core.defineTool({
      name: "search_flights",
      description: "Finds flights to a city",
      parameters: z.object({ to: z.string() }),
      run: ({ to }) => [`NV101 to ${to} at 08:15`, `NV205 to ${to} at 17:40`],
    }),
  );
  const runtime = new core.InProcessRuntime();
  const orchestrator = new core.Orchestrator({
    router: new core.RuleRouter({ rules: [], defaultHandler: "concierge" }),
    runtime,
    tools,
  });
  const model = createModel(provider.chatModel("gpt-4o-mini"));
  runtime.register(
    "concierge",
    orchestrator.handler(modelAgent({ model, system: "You book flights.", maxSteps: 3 })),
  );
  return orchestrator;
}

/** The fake model's answers: a tool call first, the final text once the tool answered. */
async function startFakeModel() {
  const { FakeOpenAIServer } = await import("@nerva/ai-sdk/testing");
  return FakeOpenAIServer.start({
    respond: (req) =>
      JSON.stringify(req.body.messages ?? []).includes('"role":"tool"')
        ? { text: "I found 2 flights to Oslo. Shall I book one?" }
        : { toolCalls: [{ name: "search_flights", arguments: { to: "Oslo" } }] },
  });
}

/** CPU ns per request of `n` create + handle() + dispose with `traceSink` (or none). */
async function loop(v, n) {
  const { core, orchestrator, sink, yields } = v;
  const options =
    sink === null
      ? { userId: "u1", sessionId: "s1" }
      : { userId: "u1", sessionId: "s1", traceSink: sink };
  const t = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    const ctx = core.ExecContext.create(options);
    await orchestrator.handle("hello there", ctx);
    ctx.dispose();
    if (yields) await new Promise(setImmediate);
  }
  const used = process.cpuUsage(t);
  return ((used.user + used.system) * 1000) / n;
}

/**
 * Alternating rounds of each variant (the order reversed every other round); returns the median
 * ns per request of each, and in `spread` the quartiles of each variant's per-round ratio to the
 * first variant's time in the same round (paired: both saw the same machine).
 */
async function alternate(variants) {
  for (const v of variants) await loop(v, N); // warm-up
  const times = Object.fromEntries(variants.map((v) => [v.name, []]));
  for (let r = 0; r < ROUNDS; r++) {
    for (const v of r % 2 === 0 ? variants : [...variants].reverse()) {
      times[v.name].push(await loop(v, N));
    }
  }
  const base = times[variants[0].name];
  const out = Object.fromEntries(variants.map((v) => [v.name, median(times[v.name])]));
  out.spread = Object.fromEntries(
    variants
      .slice(1)
      .map((v) => [v.name, spread(times[v.name].map((t, i) => (t / base[i] - 1) * 100))]),
  );
  return out;
}

async function inProcess() {
  const core = await import("@nerva/core");
  const { createOtelSink } = await import("@nerva/otel");
  const orchestrator = orchestratorOf(core);
  const otelSink = (read) => createOtelSink({ exporter: exporterOf(read) });
  const check = await orchestrator.handle("hello there", core.ExecContext.create());
  if (check.text !== "Processed: hello there") throw new Error(`unexpected answer ${check.text}`);
  const variant = (name, sink, yields = true, c = core, o = orchestrator) => ({
    name,
    sink,
    yields,
    core: c,
    orchestrator: o,
  });
  const out = {};

  if (process.env.NERVA_BASELINE_CORE) {
    const base = await import(pathToFileURL(process.env.NERVA_BASELINE_CORE).href);
    const ab = await alternate([
      variant("none", null, false),
      variant("base", null, false, base, orchestratorOf(base)),
    ]);
    out.tight_handle_ns = +ab.none.toFixed(0);
    out.tight_baseline_core_handle_ns = +ab.base.toFixed(0);
    out.no_sink_vs_baseline_core_pct = pct(ab.none, ab.base);
  }

  const plain = await alternate([
    variant("none", null),
    variant("noop", { onSpanEnd() {} }),
    variant("otel", otelSink(false)),
    variant("otel_convert", otelSink(true)),
  ]);
  Object.assign(out, {
    handle_ns: +plain.none.toFixed(0),
    noop_sink_ns: +plain.noop.toFixed(0),
    noop_sink_added_pct: pct(plain.noop, plain.none),
    otel_sink_ns: +plain.otel.toFixed(0),
    otel_sink_added_pct: pct(plain.otel, plain.none),
    otel_sink_with_conversion_ns: +plain.otel_convert.toFixed(0),
    otel_sink_with_conversion_added_pct: pct(plain.otel_convert, plain.none),
    // [min, q1, median, q3, max] of the paired per-round ratios.
    otel_sink_added_pct_paired: plain.spread.otel,
  });

  // As under NodeSDK: a real context manager, so runInSpan switches OpenTelemetry's context.
  const { context } = await from("otel", "@opentelemetry/api");
  const { AsyncLocalStorageContextManager } = await from(
    "otel",
    "@opentelemetry/context-async-hooks",
  );
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const als = await alternate([variant("none", null), variant("otel", otelSink(false))]);
  Object.assign(out, {
    als_handle_ns: +als.none.toFixed(0),
    als_otel_sink_ns: +als.otel.toFixed(0),
    als_otel_sink_added_pct: pct(als.otel, als.none),
    als_otel_sink_added_pct_paired: als.spread.otel,
  });

  if (process.env.BENCH_IN_PROCESS_EXPORT === "1") {
    // The default exporter really sending (to a receiver in this process, so its reading counts
    // too), all spans against `spans: "genai"`: what exporting fewer spans saves (information).
    const receiver = await startReceiver();
    process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = receiver.url;
    const exporting = await alternate([
      variant("none", null),
      variant("all", createOtelSink({ spans: "all" })),
      variant("genai", createOtelSink({ spans: "genai" })),
    ]);
    receiver.server.close();
    Object.assign(out, {
      export_all_added_pct_paired: exporting.spread.all,
      export_genai_added_pct_paired: exporting.spread.genai,
    });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// HTTP: `node otel.bench.mjs --serve <framework> <off|otel>` prints { port }.

/** The collector stand-in: a node:http server on 127.0.0.1:0 that counts what it receives. */
async function startReceiver() {
  const count = { bytes: 0, batches: 0 };
  const server = createServer((req, res) => {
    req.on("data", (c) => (count.bytes += c.length));
    req.on("end", () => {
      count.batches++;
      res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, count, url: `http://127.0.0.1:${server.address().port}/v1/traces` };
}

/**
 * `variant`: off, otel (default exporter), otel_official (OTLPTraceExporter as `exporter`),
 * otel_discard (converts, sends nothing), otel_receiver_in_server (otel, with the receiver in
 * this process, as before session 5's split). `url`: the bench process's receiver, for the rest.
 */
async function serve(framework, variant, url) {
  const core = await import("@nerva/core");
  const orchestrator =
    process.env.BENCH_WORK === "model" ? await modelOrchestrator(core) : orchestratorOf(core);
  let traceSink;
  const count = { requests: 0 };
  if (variant === "noop") traceSink = { onSpanEnd() {} };
  if (variant === "otel_queue") {
    // The sink and its batch queue; the exporter only acknowledges (reads nothing).
    const { createOtelSink } = await import("@nerva/otel");
    traceSink = createOtelSink({ exporter: exporterOf(false) });
  }
  if (variant === "otel_discard") {
    const { createOtelSink } = await import("@nerva/otel");
    traceSink = createOtelSink({ exporter: exporterOf(true) });
  }
  if (variant === "otel_encode") {
    // Converts and writes the protobuf request as the default exporter does, sends nothing.
    const dist = new URL("packages/otel/dist/esm/", root);
    const { encodeTraceRequest } = await import(new URL("otlp-proto.js", dist).href);
    const { ProtoWriter } = await import(new URL("proto-writer.js", dist).href);
    const { defaultResource } = await from("otel", "@opentelemetry/resources");
    const w = new ProtoWriter();
    const settings = {
      resource: defaultResource(),
      scope: { name: "@nerva/otel", version: "0" },
      captureContent: false,
      includeUserId: false,
    };
    const { createOtelSink } = await import("@nerva/otel");
    traceSink = createOtelSink({
      exporter: {
        export(spans, done) {
          encodeTraceRequest(w, spans, settings, () => undefined);
          done({ code: 0 });
        },
        shutdown: async () => {},
      },
    });
  }
  if (variant === "otel_receiver_in_server") {
    // The old placement (information): the receiver's CPU counts against the sink too.
    const receiver = await startReceiver();
    url = receiver.url;
  }
  if (
    variant === "otel" ||
    variant === "otel_genai" ||
    variant === "otel_official" ||
    variant === "otel_receiver_in_server"
  ) {
    const { createOtelSink } = await import("@nerva/otel");
    const onExportError = (err) => console.error(`export failed: ${err.message}`);
    if (variant !== "otel_official") {
      // The default exporter, configured as in production by OTEL_EXPORTER_OTLP_*.
      process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = url;
      // otel_genai: `spans: "genai"` (invoke_workflow and invoke_agent: 2 of the 4 spans).
      const spans = variant === "otel_genai" ? "genai" : "all";
      traceSink = createOtelSink({ onExportError, spans });
    } else {
      // The official OTLP protobuf exporter given as `exporter` (ReadableSpans): information.
      const { OTLPTraceExporter } = await from("otel", "@opentelemetry/exporter-trace-otlp-proto");
      traceSink = createOtelSink({ exporter: new OTLPTraceExporter({ url }), onExportError });
    }
  }
  const options = { traceSink };
  const auth = (req) => {
    req.user = { id: "bench-user", roles: ["member"] };
  };
  let port;
  if (framework === "express") {
    const { default: express } = await from("express", "express");
    const { nervaMiddleware } = await from("express", "@nerva/express");
    const app = express();
    app.use(express.json());
    app.use((req, _res, next) => {
      auth(req);
      next();
    });
    app.use(nervaMiddleware(options));
    app.post("/chat", async (req, res) => {
      count.requests++;
      res.json((await orchestrator.handle(req.body.message, req.nervaCtx)).text);
    });
    port = await new Promise((resolve) => {
      const server = app.listen(0, "127.0.0.1", () => resolve(server.address().port));
    });
  } else {
    const { default: Fastify } = await from("fastify", "fastify");
    const { nervaPlugin } = await from("fastify", "@nerva/fastify");
    const app = Fastify();
    app.addHook("onRequest", (req, _reply, done) => {
      auth(req);
      done();
    });
    await app.register(nervaPlugin, options);
    app.post("/chat", async (req) => {
      count.requests++;
      return (await orchestrator.handle(req.body.message, req.nervaCtx)).text;
    });
    await app.listen({ port: 0, host: "127.0.0.1" });
    port = app.server.address().port;
  }
  process.on("message", async (m) => {
    if (m === "cpu") process.send({ cpu: process.cpuUsage() });
    if (m === "exit") process.exit(0);
    if (m === "flush") {
      await traceSink?.forceFlush?.();
      process.send({ ...count, dropped: traceSink?.droppedSpans ?? 0 });
    }
  });
  console.log(JSON.stringify({ port }));
}

function pinLoadSide() {
  if (process.env.BENCH_PIN === "0" || availableParallelism() < 2) return false;
  try {
    execFileSync("taskset", ["-a", "-cp", "0", String(process.pid)], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

async function start(framework, variant, pinned, url) {
  const extra = process.env.BENCH_SERVER_ARGS?.split(" ").filter(Boolean) ?? [];
  const command = [process.execPath, ...extra, self, "--serve", framework, variant, url ?? ""];
  if (pinned) command.unshift("taskset", "-c", "1");
  const child = spawn(command[0], command.slice(1), {
    stdio: ["ignore", "pipe", "inherit", "ipc"],
    env: { ...process.env, NODE_ENV: "production" },
  });
  const info = await new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
      const line = out.split("\n").find((l) => l.startsWith("{"));
      if (line !== undefined) resolve(JSON.parse(line));
    });
    child.once("exit", (code) => reject(new Error(`${framework}/${variant} exited ${code}`)));
  });
  return { child, ...info };
}

const ask = (child, what) =>
  new Promise((resolve) => {
    child.once("message", resolve);
    child.send(what);
  });

async function measure(server, seconds) {
  const { default: autocannon } = await import("autocannon");
  const before = (await ask(server.child, "cpu")).cpu;
  const startedAt = performance.now();
  const r = await autocannon({
    url: `http://127.0.0.1:${server.port}/chat`,
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ message: "Book me a flight" }),
    connections: 50,
    duration: seconds,
    // A fixed arrival rate (BENCH_RATE requests/s): every variant and run sees the same load.
    ...(RATE > 0 ? { overallRate: RATE } : {}),
  });
  // Export of what the run left buffered counts too: flush inside the measured CPU window.
  await ask(server.child, "flush");
  const after = (await ask(server.child, "cpu")).cpu;
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`${r.non2xx} non-2xx, ${r.errors} errors`);
  const cpu = after.user + after.system - before.user - before.system;
  return {
    rps: r.requests.average,
    cpuUs: cpu / r.requests.total,
    busy: cpu / (performance.now() - startedAt) / 1000,
  };
}

/** Quartiles of `xs`: [min, q1, median, q3, max]. */
function spread(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q) => s[Math.round(q * (s.length - 1))];
  return [at(0), at(0.25), at(0.5), at(0.75), at(1)].map((x) => +x.toFixed(1));
}

/**
 * Server CPU per request, sink off against each variant. GENERATIONS sets of fresh servers (one
 * per variant), each warmed, then ROUNDS_PER_GENERATION rounds alternating their order; each
 * variant's round is paired with the `off` round next to it in time, and the figure is the median
 * of those paired ratios over every round of every generation, with its spread. A round measures
 * the server's whole CPU (process.cpuUsage: every thread, GC included) over autocannon's run plus
 * a flush of what the sink still holds.
 */
async function http() {
  const pinned = pinLoadSide();
  const generations = Number(process.env.BENCH_GENERATIONS ?? 3);
  const roundsPer = Number(process.env.BENCH_ROUNDS_PER_GENERATION ?? 5);
  const out = { pinned, generations, rounds_per_generation: roundsPer, seconds: DURATION_SECONDS };
  for (const framework of (process.env.BENCH_FRAMEWORKS ?? "fastify,express").split(",")) {
    const variants = [
      "off",
      "otel",
      ...(process.env.BENCH_RECEIVER_IN_SERVER === "0" ? [] : ["otel_receiver_in_server"]),
      ...(process.env.BENCH_HTTP_SPLIT === "1"
        ? ["otel_discard", "otel_encode", "otel_official"]
        : []),
      // Steps from off to otel, each adding one part: information.
      ...(process.env.BENCH_HTTP_STEPS === "1" ? ["noop", "otel_queue", "otel_encode"] : []),
      ...(process.env.BENCH_HTTP_EXTRA?.split(",").filter(Boolean) ?? []),
    ];
    const runs = Object.fromEntries(variants.map((v) => [v, []]));
    const ratios = Object.fromEntries(variants.map((v) => [v, []]));
    const busy = Object.fromEntries(variants.map((v) => [v, []]));
    const tally = { requests: 0, bytes: 0, batches: 0, dropped: 0 };
    for (let g = 0; g < generations; g++) {
      const servers = {};
      const receivers = {};
      try {
        for (const v of variants) {
          // The collector stand-in of each exporting server runs here, in the load generator's
          // process (pinned with autocannon): the server's CPU is what the sink costs it.
          if (v === "otel" || v === "otel_official" || v === "otel_genai") {
            receivers[v] = await startReceiver();
          }
          servers[v] = await start(framework, v, pinned, receivers[v]?.url);
        }
        for (const v of variants) await measure(servers[v], 2); // warm-up
        const bytesBefore = receivers.otel.count.bytes;
        const batchesBefore = receivers.otel.count.batches;
        const requestsBefore = (await ask(servers.otel.child, "flush")).requests;
        for (let r = 0; r < roundsPer; r++) {
          // Off first in even rounds, last in odd ones: a drift in the machine's load hits both.
          const order = r % 2 === 0 ? variants : [...variants].reverse();
          const round = {};
          for (const v of order) round[v] = await measure(servers[v], DURATION_SECONDS);
          for (const v of variants) {
            runs[v].push(round[v].cpuUs);
            ratios[v].push((round[v].cpuUs / round.off.cpuUs - 1) * 100);
            busy[v].push(round[v].busy);
          }
        }
        const count = await ask(servers.otel.child, "flush");
        tally.requests += count.requests - requestsBefore;
        tally.bytes += receivers.otel.count.bytes - bytesBefore;
        tally.batches += receivers.otel.count.batches - batchesBefore;
        tally.dropped += count.dropped;
      } finally {
        for (const s of Object.values(servers)) await stop(s.child);
        for (const r of Object.values(receivers)) r.server.close();
      }
    }
    const row = {
      cpu_us_per_request_off: spread(runs.off),
      // Server CPU busy (CPU time over wall time) while sink off: 1.0 means the server was the
      // bottleneck; less, that autocannon was (CPU per request then includes idle wake-ups).
      server_busy_off: +median(busy.off).toFixed(2),
    };
    for (const v of variants.slice(1)) {
      row[`${v}_cpu_us_per_request`] = spread(runs[v]);
      // [min, q1, median, q3, max] of the paired per-round ratios: the figure is the median.
      row[`${v}_added_pct`] = spread(ratios[v]);
    }
    Object.assign(row, {
      // 4 spans per request (handle, router.classify, runtime.invoke, responder.format).
      spans_dropped: tally.dropped,
      otlp_bytes_per_request: Math.round(tally.bytes / tally.requests),
      spans_per_http_request: Math.round((4 * tally.requests) / Math.max(1, tally.batches)),
    });
    out[framework] = row;
    console.error(`${framework}: ${JSON.stringify(row)}`);
  }
  return out;
}

/** Ends a server; with BENCH_SERVER_ARGS="--cpu-prof ..." it exits normally to write its profile. */
async function stop(child) {
  if (process.env.BENCH_SERVER_ARGS === undefined) return void child.kill("SIGKILL");
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.send("exit");
  await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
  child.kill("SIGKILL");
}

if (process.argv[2] === "--serve") {
  await serve(process.argv[3], process.argv[4], process.argv[5]);
} else {
  const result = { bench: "otel", rounds: ROUNDS };
  if (process.env.BENCH_IN_PROCESS !== "0") {
    result.in_process = await inProcess();
    console.error(`in process: ${JSON.stringify(result.in_process)}`);
  }
  if (process.env.BENCH_HTTP !== "0") {
    const fake = process.env.BENCH_WORK === "model" ? await startFakeModel() : null;
    if (fake !== null) process.env.BENCH_FAKE_OPENAI_URL = fake.url;
    result.work = fake === null ? "handle" : "model call with one tool call";
    result.http = await http();
    await fake?.close();
  }
  console.log(JSON.stringify(result));
}
