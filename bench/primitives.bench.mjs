// Per-call cost of the router, tool and responder primitives, each against a bare baseline doing
// the same work without Nerva, one fresh ExecContext per call on both sides:
// - RuleRouter.classify (3 rules + default) vs the same regular expressions tested by hand;
// - FunctionToolManager.call (zod-validated args, deadline, span) vs zod parse + the function;
// - ChannelResponder.format (plain, maxLength) vs PassthroughResponder.format;
// - McpToolManager.call over stdio to a local MCP server process: median and p99 latency, and
//   throughput with 50 calls in flight.
// Run: pnpm --filter @nerva/core build && node --expose-gc bench/primitives.bench.mjs
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { ChannelResponder, PassthroughResponder } from "@nerva/core/responder";
import { ExecContext, FunctionToolManager, RuleRouter, agentResult, defineTool } from "@nerva/core";
import { McpToolManager } from "@nerva/core/mcp";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (xs, p) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];
const options = { userId: "u1", sessionId: "s1" };

/** Median ns per call of `fn(ctx)` over `rounds` rounds of `n` calls, each with a fresh context. */
async function measure(fn, n, rounds = 7) {
  for (let i = 0; i < n; i++) {
    const ctx = ExecContext.create(options);
    await fn(ctx);
    ctx.dispose();
  }
  const per = [];
  for (let r = 0; r < rounds; r++) {
    const t = process.hrtime.bigint();
    for (let i = 0; i < n; i++) {
      const ctx = ExecContext.create(options);
      await fn(ctx);
      ctx.dispose();
    }
    per.push(Number(process.hrtime.bigint() - t) / n);
  }
  return median(per);
}

// Router
const rules = [
  { handler: "flight_agent", keywords: ["flight", "fly", "plane"] },
  { handler: "weather_agent", pattern: /\b(weather|forecast)\b/i },
  { handler: "hotel_agent", pattern: /\bhotels?\b/i },
];
const router = new RuleRouter({ rules, defaultHandler: "chat_agent" });
const bareRes = [
  /\bflight\b/i,
  /\bfly\b/i,
  /\bplane\b/i,
  /\b(weather|forecast)\b/i,
  /\bhotels?\b/i,
];
const message = "Book me a flight to Oslo, please";
if ((await router.classify(message, ExecContext.create())).best?.name !== "flight_agent") {
  throw new Error("router sanity check failed");
}
const bareRoute = async () => {
  const hits = [];
  for (const re of bareRes) if (re.test(message)) hits.push(re);
  return hits.length > 0 ? { name: "flight_agent", score: 0.67 } : null;
};

// Tools
const schema = z.object({ a: z.number(), b: z.number() });
// Async, like real tools (I/O); the baseline awaits the same function.
const addFn = async ({ a, b }) => a + b;
const tools = new FunctionToolManager().register(
  defineTool({ name: "add", description: "Adds", parameters: schema, run: addFn }),
);
const args = { a: 1, b: 2 };
if ((await tools.call("add", args, ExecContext.create())).output !== 3)
  throw new Error("tool sanity");

// Responder
const channel = new ChannelResponder({ channels: { sms: { format: "plain", maxLength: 160 } } });
const passthrough = new PassthroughResponder();
const reply = agentResult("flight_agent", {
  output: "Found **2 flights**: LH 123 at 08:10 and SK 456.",
});

const routerBare = await measure(bareRoute, 200_000);
const routerNs = await measure((ctx) => router.classify(message, ctx), 200_000);
const toolBare = await measure(() => addFn(schema.parse(args)), 200_000);
const toolNs = await measure((ctx) => tools.call("add", args, ctx), 100_000);
const passNs = await measure((ctx) => passthrough.format(reply, "sms", ctx), 200_000);
const channelNs = await measure((ctx) => channel.format(reply, "sms", ctx), 200_000);

// MCP over stdio, against the fixture server the tests use.
const mcp = await McpToolManager.connect({
  command: process.execPath,
  args: [join(root, "packages/core/test/fixtures/mcp-server.mjs")],
});
const latencies = [];
let parallelPerSec;
try {
  const ctx = ExecContext.create(options);
  for (let i = 0; i < 200; i++) await mcp.call("add", args, ctx);
  for (let i = 0; i < 2000; i++) {
    const t = performance.now();
    const r = await mcp.call("add", args, ctx);
    latencies.push(performance.now() - t);
    if (r.status !== "success") throw new Error(`mcp call: ${r.error}`);
  }
  // 20 batches of 50 concurrent calls (more at once only queues on the pipe).
  const parallelStart = performance.now();
  for (let b = 0; b < 20; b++) {
    await Promise.all(Array.from({ length: 50 }, () => mcp.call("add", args, ctx)));
  }
  parallelPerSec = 1000 / ((performance.now() - parallelStart) / 1000);
} finally {
  await mcp.close();
}

console.log(
  JSON.stringify({
    bench: "primitives",
    rule_router_ns: +routerNs.toFixed(1),
    rule_router_bare_ns: +routerBare.toFixed(1),
    rule_router_added_ns: +(routerNs - routerBare).toFixed(1),
    function_tool_call_ns: +toolNs.toFixed(1),
    function_tool_bare_ns: +toolBare.toFixed(1),
    function_tool_added_ns: +(toolNs - toolBare).toFixed(1),
    channel_format_ns: +channelNs.toFixed(1),
    passthrough_format_ns: +passNs.toFixed(1),
    mcp_call_median_ms: +median(latencies).toFixed(3),
    mcp_call_p99_ms: +pct(latencies, 99).toFixed(3),
    mcp_calls_per_s_50_concurrent: Math.round(parallelPerSec),
  }),
);
