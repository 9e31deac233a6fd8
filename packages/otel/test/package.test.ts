// The built package as users load it (dist/, which the test command builds first): ESM import and
// CommonJS require, and the heavy OpenTelemetry modules loaded only when used.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const pkg = join(dirname(fileURLToPath(import.meta.url)), "..");
const node = (args: string[]) =>
  execFileSync(process.execPath, args, {
    cwd: pkg,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  }).trim();

const RUN = `const { ExecContext, InProcessRuntime } = await import("@nerva/core");
const { createOtelSink } = await import("@nerva/otel");
const { InMemorySpanExporter, SimpleSpanProcessor } = await import("@opentelemetry/sdk-trace-base");
const exporter = new InMemorySpanExporter();
const sink = createOtelSink({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const runtime = new InProcessRuntime();
runtime.register("agent", async () => "ok");
await runtime.invoke("agent", { message: "hi" }, ExecContext.create({ traceSink: sink }));
console.log(exporter.getFinishedSpans().map((s) => s.name).join(","));`;

describe("@nerva/otel package entry", () => {
  it("has been built (the test command runs turbo build first)", () => {
    expect(existsSync(join(pkg, "dist/esm/index.js")), "run `pnpm build` first").toBe(true);
  });

  it("loads with ESM import and exports a span", () => {
    expect(node(["--input-type=module", "-e", RUN])).toBe("invoke_agent agent");
  });

  it("loads with CommonJS require", () => {
    const out = node([
      "-e",
      `const m = require("@nerva/otel"); console.log(typeof m.createOtelSink, typeof m.startNervaOtel, typeof m.activeTraceparent)`,
    ]);
    expect(out).toBe("function function function");
  });

  it("loads the OTLP exporters and the NodeSDK only when they are used", () => {
    const out = node([
      "-e",
      `require("@nerva/otel");
const loaded = Object.keys(require.cache);
const has = (name) => loaded.some((f) => f.includes("/@opentelemetry/" + name + "/"));
console.log(has("sdk-node"), has("otlp-exporter-base"), has("otlp-transformer"), has("exporter-trace-otlp-http"));
require("@nerva/otel").createOtelSink();
const after = Object.keys(require.cache);
const now = (name) => after.some((f) => f.includes("/@opentelemetry/" + name + "/"));
console.log(now("otlp-exporter-base"), now("otlp-transformer"), now("exporter-trace-otlp-http"));`,
    ]);
    // The default exporter: the official transport and serializer, not the JSON exporter.
    expect(out).toBe("false false false false\ntrue true false");
  });
});
