// OTLP/HTTP against a real receiver on 127.0.0.1: what arrives (JSON decoded, protobuf bytes),
// and what happens when nothing listens.
import { OTLPTraceExporter as JsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtoExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { afterEach, describe, expect, it, vi } from "vitest";
import { NervaError } from "@nerva/core";
import { createOtelSink } from "../src/index.js";
import { stderrReporter } from "../src/export-watch.js";
import {
  attr,
  closedPort,
  jsonSpans,
  startReceiver,
  type Receiver,
} from "./receiver.test-support.js";
import { flightWorld } from "./world.test-support.js";

const CALLER_TRACE = "0af7651916cd43dd8448eb211c80319c";
const CALLER = `00-${CALLER_TRACE}-b7ad6b7169203331-01`;

let receiver: Receiver | null = null;
afterEach(async () => {
  await receiver?.close();
  receiver = null;
  vi.restoreAllMocks();
});

describe("OTLP/HTTP to a real receiver", () => {
  it("JSON: the request's tree arrives whole, joined to the caller, with its usage", async () => {
    receiver = await startReceiver();
    const sink = createOtelSink({
      exporter: new JsonExporter({ url: receiver.url }),
      serviceName: "flights",
    });
    const { ctx } = await flightWorld().request("flight", { traceSink: sink, traceparent: CALLER });
    await sink.forceFlush();

    expect(receiver.received.map((r) => [r.path, r.contentType])).toEqual([
      ["/v1/traces", "application/json"],
    ]);
    const spans = jsonSpans(receiver.received);
    expect(spans).toHaveLength(ctx.spans.length);
    expect(new Set(spans.map((s) => s.service))).toEqual(new Set(["flights"]));
    expect(new Set(spans.map((s) => s.scope))).toEqual(new Set(["@nerva/otel"]));
    expect(new Set(spans.map((s) => s.traceId))).toEqual(new Set([CALLER_TRACE]));
    // The same ids and parents as the Nerva tree; the root hangs under the caller's span.
    expect(spans.map((s) => [s.spanId, s.parentSpanId ?? null]).sort()).toEqual(
      ctx.spans.map((s) => [s.id, s.parentId]).sort(),
    );
    const byName = (name: string) => spans.find((s) => s.name === name)!;
    const root = byName("invoke_workflow nerva");
    expect(root.parentSpanId).toBe("b7ad6b7169203331");
    expect(byName("execute_tool search_flights").parentSpanId).toBe(
      byName("invoke_agent flight_agent").spanId,
    );
    expect(byName("delegate").parentSpanId).toBe(byName("invoke_agent flight_agent").spanId);
    expect(byName("invoke_agent calendar_agent").parentSpanId).toBe(byName("delegate").spanId);
    expect(byName("execute_tool calendar").parentSpanId).toBe(
      byName("invoke_agent calendar_agent").spanId,
    );
    expect(attr(root, "nerva.usage.total.input_tokens")).toBe(160);
    expect(attr(root, "nerva.usage.total.output_tokens")).toBe(40);
    expect(attr(byName("invoke_agent calendar_agent"), "gen_ai.usage.input_tokens")).toBe(40);
    expect(attr(byName("execute_tool calendar"), "gen_ai.tool.type")).toBe("function");
    expect(byName("invoke_agent flight_agent").events?.map((e) => e.name)).toEqual([
      "flight.searching",
    ]);
    await sink.shutdown();
  });

  it("protobuf: application/x-protobuf carrying the raw trace and span id bytes", async () => {
    receiver = await startReceiver();
    const sink = createOtelSink({ exporter: new ProtoExporter({ url: receiver.url }) });
    const { ctx } = await flightWorld().request("flight", { traceSink: sink });
    await sink.forceFlush();
    expect(receiver.received).toHaveLength(1);
    const [sent] = receiver.received;
    expect(sent?.contentType).toBe("application/x-protobuf");
    const body = sent!.body;
    // Protobuf carries ids as bytes, not hex: every id is in the body in its 8/16-byte form.
    expect(body.includes(Buffer.from(ctx.traceId, "hex"))).toBe(true);
    for (const span of ctx.spans) {
      expect(body.includes(Buffer.from(span.id, "hex")), span.name).toBe(true);
      expect(body.includes(Buffer.from(span.id, "utf8")), "hex text").toBe(false);
    }
    expect(body.includes(Buffer.from("execute_tool search_flights"))).toBe(true);
    await sink.shutdown();
  });
});

describe("export failures are loud", () => {
  it("nothing listening: forceFlush rejects UNAVAILABLE and onExportError is told", async () => {
    const port = await closedPort();
    const errors: Error[] = [];
    const sink = createOtelSink({
      exporter: new ProtoExporter({
        url: `http://127.0.0.1:${port}/v1/traces`,
        timeoutMillis: 800,
      }),
      onExportError: (e) => errors.push(e),
    });
    await flightWorld().request("flight", { traceSink: sink });
    const err = await sink.forceFlush().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(NervaError);
    expect((err as NervaError).code).toBe("UNAVAILABLE");
    expect((err as NervaError).message).toMatch(
      /Span export failed: .*OTEL_EXPORTER_OTLP_ENDPOINT/,
    );
    expect(errors.length).toBeGreaterThanOrEqual(1);
    // Still failing: nothing new to send, and forceFlush still says so.
    await expect(sink.forceFlush()).rejects.toThrow(/Span export failed/);
    await expect(sink.shutdown()).rejects.toThrow(/Span export failed/);
  });

  it("forceFlush rejects while exports fail, and resolves once one succeeds again", async () => {
    receiver = await startReceiver();
    receiver.status = 400; // not retried: fails at once
    const errors: Error[] = [];
    const sink = createOtelSink({
      exporter: new JsonExporter({ url: receiver.url }),
      onExportError: (e) => errors.push(e),
    });
    const world = flightWorld();
    await world.request("flight", { traceSink: sink });
    await expect(sink.forceFlush()).rejects.toThrow(/Span export failed/);
    expect(errors).toHaveLength(1);
    receiver.status = 200;
    await world.request("flight", { traceSink: sink });
    await sink.forceFlush();
    expect(receiver.received).toHaveLength(2);
    await sink.shutdown();
  });

  it("by default prints one stderr line, then at most one a minute", async () => {
    const lines: string[] = [];
    vi.spyOn(process.stderr, "write").mockImplementation((chunk) => {
      lines.push(String(chunk));
      return true;
    });
    const port = await closedPort();
    const sink = createOtelSink({
      exporter: new JsonExporter({ url: `http://127.0.0.1:${port}/v1/traces`, timeoutMillis: 500 }),
    });
    const world = flightWorld();
    for (let i = 0; i < 2; i++) {
      await world.request("flight", { traceSink: sink });
      await sink.forceFlush().catch(() => undefined);
    }
    vi.restoreAllMocks();
    const ours = lines.filter((l) => l.startsWith("[nerva/otel]"));
    expect(ours).toHaveLength(1);
    expect(ours[0]).toMatch(/span export failed: .*OTEL_EXPORTER_OTLP_ENDPOINT/);
  });

  it("stderrReporter counts what it did not print and speaks again after a minute", () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      const lines: string[] = [];
      const report = stderrReporter((l) => lines.push(l));
      report(new Error("ECONNREFUSED"));
      report(new Error("ECONNREFUSED"));
      report(new Error("ECONNREFUSED"));
      vi.setSystemTime(Date.now() + 60_001);
      report(new Error("ECONNREFUSED"));
      expect(lines).toHaveLength(2);
      expect(lines[1]).toContain("and 2 more failures since the last report");
    } finally {
      vi.useRealTimers();
    }
  });
});
