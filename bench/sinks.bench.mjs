// The cost of the built-in trace sinks on Orchestrator.handle (RuleRouter + InProcessRuntime, one
// fresh ExecContext per request), against handle() without a sink in the same run: a no-op sink,
// UsageMeter, and JsonLinesTraceSink writing to a no-op function and to /dev/null through a file
// stream. The loop yields to the event loop every 100 requests (as a server does between I/O), so
// the JSON sink's deferred serialisation and writes happen inside the timed span: those figures
// are whole CPU cost per request. `json_lines_in_request` times only the request path (the
// queueing), its writes done after the clock stops, as the OTel rows do ("export deferred").
// Run: pnpm --filter @nerva/core build && node --expose-gc bench/sinks.bench.mjs
import { createWriteStream } from "node:fs";
import { ExecContext, InProcessRuntime, Orchestrator, RuleRouter } from "@nerva/core";
import { JsonLinesTraceSink, UsageMeter } from "@nerva/core/tracing";

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const yieldLoop = () => new Promise((r) => setImmediate(r));

const runtime = new InProcessRuntime();
runtime.register("my_agent", async (input, ctx) => {
  ctx.recordTokens({ promptTokens: 12, completionTokens: 3, costUsd: 0.0001 });
  return `Processed: ${input.message}`;
});
const orchestrator = new Orchestrator({
  router: new RuleRouter({ rules: [{ handler: "my_agent", pattern: "^hello\\b" }] }),
  runtime,
});
const message = "hello there";

const devNull = createWriteStream("/dev/null");
const sinks = {
  none: null,
  noop: { onSpanEnd() {} },
  usage_meter: new UsageMeter(),
  json_lines_fn: new JsonLinesTraceSink({ write() {} }),
  json_lines_dev_null: new JsonLinesTraceSink({ stream: devNull, maxBacklog: 100_000 }),
  json_lines_in_request: new JsonLinesTraceSink({ write() {}, maxBacklog: 100_000 }),
};
const deferred = new Set(["json_lines_in_request"]);

/**
 * Per-request ns of handle() with `sink`, yielding to the event loop every 100 requests.
 * `deferred`: the clock stops while the loop yields and the sink flushes, so a deferring sink's
 * writes are not counted: the in-request cost alone.
 */
async function handle(sink, n, deferred = false) {
  const options = sink === null ? { userId: "u1" } : { userId: "u1", traceSink: sink };
  let ns = 0n;
  let t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const ctx = ExecContext.create(options);
    await orchestrator.handle(message, ctx);
    ctx.dispose();
    if (i % 100 === 99) {
      if (deferred) {
        ns += process.hrtime.bigint() - t;
        await sink.forceFlush();
        t = process.hrtime.bigint();
      } else {
        await yieldLoop();
      }
    }
  }
  await sink?.forceFlush?.();
  ns += process.hrtime.bigint() - t;
  return Number(ns) / n;
}

// Sanity: the benchmarked path answers, and the sinks see it.
const check = await orchestrator.handle(
  message,
  ExecContext.create({ userId: "u1", traceSink: sinks.usage_meter }),
);
if (check.text !== "Processed: hello there") throw new Error(`unexpected answer ${check.text}`);
if (sinks.usage_meter.byUser("u1")?.requests !== 1) throw new Error("the meter saw nothing");

for (const [name, sink] of Object.entries(sinks)) await handle(sink, 20_000, deferred.has(name)); // warm up

// The machine is shared: load changes within seconds. Short rounds, each timing every variant
// right after the baseline, give one ratio per round measured under the same load; the median
// ratio (and its quartiles) is what is reported.
const rounds = 41;
const n = 5_000;
const names = Object.keys(sinks).filter((k) => k !== "none");
const ratios = Object.fromEntries(names.map((k) => [k, []]));
const baseNs = [];
for (let r = 0; r < rounds; r++) {
  for (const name of names) {
    const base = await handle(null, n);
    baseNs.push(base);
    ratios[name].push((await handle(sinks[name], n, deferred.has(name))) / base);
  }
}
for (const name of ["json_lines_fn", "json_lines_dev_null", "json_lines_in_request"]) {
  if (sinks[name].droppedLines !== 0) throw new Error(`${name} dropped lines`);
}

const quartiles = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return [
    s[Math.floor(s.length / 4)],
    s[Math.floor(s.length / 2)],
    s[Math.floor((3 * s.length) / 4)],
  ];
};
const base = median(baseNs);
const result = { bench: "sinks", handle_no_sink_ns: +base.toFixed(1) };
for (const name of names) {
  const [q1, m, q3] = quartiles(ratios[name]);
  result[`${name}_ratio`] = +m.toFixed(3);
  result[`${name}_ratio_iqr`] = [+q1.toFixed(3), +q3.toFixed(3)];
  result[`${name}_added_ns`] = +((m - 1) * base).toFixed(1);
}
console.log(JSON.stringify(result));
devNull.end();
