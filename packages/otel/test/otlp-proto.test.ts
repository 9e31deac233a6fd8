// The default exporter writes OTLP protobuf straight from Nerva's spans. What it writes must read
// back (protobufjs, the opentelemetry-proto messages) exactly as what OpenTelemetry's own
// serializer writes for the same spans as ReadableSpans; and it must reach a real receiver.
import { setTimeout as sleep } from "node:timers/promises";
import { trace } from "@opentelemetry/api";
import { ProtobufTraceSerializer } from "@opentelemetry/otlp-transformer";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ExecContext, NervaError } from "@nerva/core";
import { type ContextEvent, type Span } from "@nerva/core/context";
import { createOtelSink, startNervaOtel } from "../src/index.js";
import { encodeTraceRequest } from "../src/otlp-proto.js";
import { ProtoWriter } from "../src/proto-writer.js";
import { NervaReadableSpan, type ExportSettings } from "../src/readable-span.js";
import {
  attrOf,
  decodeTraceRequest,
  decodedSpans,
  type DecodedRequest,
} from "./otlp-decode.test-support.js";
import { startReceiver, type Receiver } from "./receiver.test-support.js";
import { flightWorld } from "./world.test-support.js";

const official = (spans: Parameters<typeof ProtobufTraceSerializer.serializeRequest>[0]) =>
  ProtobufTraceSerializer.serializeRequest(spans);

const NAMES = ["handle", "runtime.invoke", "tools.call", "chat", "mcp.call", "delegate", "db.q"];
const KEYS = [
  "handler",
  "tool",
  "model",
  "status",
  "server",
  "length",
  "gen_ai.request.model",
  "gen_ai.workflow.name",
  "gen_ai.tool.call.id",
  "gen_ai.input.messages",
  "error.type",
  "http.route",
  // Names the mapping writes too (the encoder's one-pass writer hands these to the mapping)
  "request_id",
  "nerva.status",
  "gen_ai.operation.name",
  "server.address",
];
const value = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.string({ unit: "grapheme", maxLength: 60 }),
  fc.integer({ min: -(2 ** 31), max: 2 ** 31 }),
  fc.maxSafeInteger(),
  fc.double(),
  fc.boolean(),
);
const attributes = fc.dictionary(fc.oneof(fc.constantFrom(...KEYS), fc.string()), value, {
  maxKeys: 8,
});
const spanSpec = fc.record({
  name: fc.constantFrom(...NAMES),
  attributes,
  kind: fc.constantFrom("internal" as const, "client" as const, "server" as const),
  parent: fc.nat(),
  error: fc.option(fc.string({ maxLength: 150 }), { nil: undefined }),
  tokens: fc.option(fc.record({ promptTokens: fc.nat(5000), completionTokens: fc.nat(5000) }), {
    nil: undefined,
  }),
  events: fc.option(
    fc.array(fc.record({ name: fc.string({ maxLength: 20 }), attributes, at: fc.nat(10_000) }), {
      maxLength: 3,
    }),
    { nil: undefined },
  ),
  mcpServer: fc.option(fc.string({ maxLength: 20 }), { nil: undefined }),
});
const request = fc.record({
  spans: fc.array(spanSpec, { minLength: 1, maxLength: 12 }),
  remoteParent: fc.boolean(),
  captureContent: fc.boolean(),
  includeUserId: fc.boolean(),
  resource: attributes,
});

type Spec = typeof spanSpec extends fc.Arbitrary<infer T> ? T : never;

/** One internal span with `attributes`, nothing else. */
const simple = (name: string, attributes: Spec["attributes"]): Spec => ({
  name,
  attributes,
  kind: "internal",
  parent: 0,
  error: undefined,
  tokens: undefined,
  events: undefined,
  mcpServer: undefined,
});

/** Real Nerva spans of one request tree, as `specs` describe them, ended children first. */
function buildTree(specs: readonly Spec[], remoteParent: boolean): Span[] {
  const ctx = ExecContext.create({
    userId: "u1",
    sessionId: "s1",
    ...(remoteParent
      ? { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" }
      : {}),
  });
  const contexts: ExecContext[] = [];
  const spans: Span[] = [];
  for (const [i, spec] of specs.entries()) {
    const parent = i === 0 || spec.parent % (i + 1) === i ? ctx : contexts[spec.parent % i]!;
    const span = parent.startSpan(spec.name, spec.attributes, { kind: spec.kind });
    const inner = parent.fork({ span });
    if (spec.tokens !== undefined) inner.recordTokens(spec.tokens);
    contexts.push(inner);
    spans.push(span);
  }
  for (let i = specs.length - 1; i >= 0; i--) {
    const error = specs[i]!.error;
    if (error === undefined) spans[i]!.end();
    else spans[i]!.end("error", error);
  }
  return spans;
}

function settingsOf(o: {
  captureContent: boolean;
  includeUserId: boolean;
  resource: Record<string, unknown>;
}): ExportSettings {
  return {
    resource: resourceFromAttributes({ ...o.resource, "service.name": "flights" } as never),
    scope: { name: "@nerva/otel", version: "0.1.0" },
    captureContent: o.captureContent,
    includeUserId: o.includeUserId,
  };
}

describe("the OTLP protobuf encoder", () => {
  it("writes what OpenTelemetry's serializer writes for the same spans (random trees)", () => {
    const writer = new ProtoWriter();
    fc.assert(
      fc.property(request, (r) => {
        const settings = settingsOf(r);
        const spans = buildTree(r.spans, r.remoteParent);
        const readable = spans.map((span, i) => {
          const spec = r.spans[i]!;
          const events: ContextEvent[] | undefined = spec.events?.map((e) => ({
            name: e.name,
            timestampMs: span.startMs + e.at / 7,
            traceId: span.traceId,
            requestId: span.requestId,
            spanId: span.id,
            attributes: e.attributes as ContextEvent["attributes"],
          }));
          const extras =
            events === undefined && spec.mcpServer === undefined
              ? undefined
              : { events, mcpServer: spec.mcpServer };
          return new NervaReadableSpan(span, settings, undefined, extras);
        });
        // The queue holds plain spans when they have no extras: both kinds go through.
        const items = readable.map((rs) => (rs.extras === undefined ? rs.source : rs));
        const ours = encodeTraceRequest(writer, items, settings, official)!;
        const theirs = official(readable)!;
        expect(decodeTraceRequest(ours)).toEqual(decodeTraceRequest(theirs));
      }),
      { numRuns: 300 },
    );
  });

  it("appends the app's own spans as OpenTelemetry writes them, in the same request", async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    });
    provider.getTracer("db-client").startSpan("SELECT flights").end();
    const [foreign] = exporter.getFinishedSpans();
    const settings = settingsOf({ captureContent: false, includeUserId: false, resource: {} });
    const [span] = buildTree([simple("handle", {})], false);
    const bytes = encodeTraceRequest(new ProtoWriter(), [span!, foreign!], settings, official)!;
    const decoded = decodeTraceRequest(bytes);
    expect(decoded.resourceSpans).toHaveLength(2);
    expect(decoded.resourceSpans![1]).toEqual(
      decodeTraceRequest(official([foreign!])!).resourceSpans![0],
    );
    expect(decodedSpans(decoded).map((s) => s.name)).toEqual([
      "invoke_workflow nerva",
      "SELECT flights",
    ]);
    // Nothing to send: no request at all.
    expect(encodeTraceRequest(new ProtoWriter(), [], settings, official)).toBeUndefined();
    await provider.shutdown();
  });

  it("grows its buffer past 64 KiB and keeps lengths of 2 and 3 bytes right", () => {
    const settings = settingsOf({ captureContent: true, includeUserId: true, resource: {} });
    const big = "é".repeat(20_000); // 40,000 bytes: one attribute past 16 KiB
    const spans = Array.from({ length: 4 }, () =>
      buildTree([simple("tools.call", { tool: "t", big })], false),
    ).flat();
    const writer = new ProtoWriter();
    const ours = encodeTraceRequest(writer, spans, settings, official)!;
    expect(ours.length).toBeGreaterThan(160_000);
    const readable = spans.map((s) => new NervaReadableSpan(s, settings, undefined, undefined));
    expect(decodeTraceRequest(ours)).toEqual(decodeTraceRequest(official(readable)!));
    // The writer is reused: a small request after the big one is whole.
    const small = encodeTraceRequest(writer, spans.slice(0, 1), settings, official)!;
    expect(decodedSpans(decodeTraceRequest(small))).toHaveLength(1);
  });
});

let receiver: Receiver | null = null;
afterEach(async () => {
  vi.unstubAllEnvs();
  await receiver?.close();
  receiver = null;
});

describe("the default exporter against a real OTLP receiver", () => {
  it("sends the request's tree from the OTEL_EXPORTER_OTLP_* variables", async () => {
    receiver = await startReceiver();
    vi.stubEnv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.url);
    vi.stubEnv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-tenant=acme");
    const sink = createOtelSink({ serviceName: "flights" });
    const { ctx } = await flightWorld().request("flight", { traceSink: sink });
    await sink.forceFlush();

    expect(receiver.received).toHaveLength(1);
    const [sent] = receiver.received;
    expect(sent!.contentType).toBe("application/x-protobuf");
    const decoded: DecodedRequest = decodeTraceRequest(sent!.body);
    const service = decoded.resourceSpans![0]!.resource!.attributes!.find(
      (a) => a.key === "service.name",
    );
    expect(service?.value?.stringValue).toBe("flights");
    expect(decoded.resourceSpans![0]!.scopeSpans![0]!.scope?.name).toBe("@nerva/otel");
    const spans = decodedSpans(decoded);
    expect(spans.map((s) => [s.spanId, s.parentSpanId ?? null]).sort()).toEqual(
      ctx.spans.map((s) => [s.id, s.parentId]).sort(),
    );
    expect(new Set(spans.map((s) => s.traceId))).toEqual(new Set([ctx.traceId]));
    const byName = (name: string) => spans.find((s) => s.name === name)!;
    const root = byName("invoke_workflow nerva");
    expect(attrOf(root, "nerva.request_id")).toBe(ctx.requestId);
    expect(attrOf(root, "nerva.usage.total.input_tokens")).toBe(160);
    expect(attrOf(byName("execute_tool search_flights"), "gen_ai.tool.type")).toBe("function");
    expect(byName("invoke_agent flight_agent").events?.map((e) => e.name)).toEqual([
      "flight.searching",
    ]);
    await sink.shutdown();
  });

  it("sends a lone request's spans within 5 s of their end, not 5 s in the queue then 5 s more", async () => {
    // The subject is the delay itself: the queue waits up to 5 s (OTEL_BSP_SCHEDULE_DELAY's
    // default) before it hands the spans over, and the exporter must not add its own 5 s.
    receiver = await startReceiver();
    vi.stubEnv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.url);
    const sink = createOtelSink({ serviceName: "flights" });
    const { ctx } = await flightWorld().request("flight", { traceSink: sink });
    const ended = Math.min(...ctx.spans.map((s) => s.endMs ?? Infinity));
    while (receiver.received.length === 0 && Date.now() - ended < 12_000) {
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(receiver.received).toHaveLength(1);
    const after = Date.now() - ended;
    expect(after).toBeGreaterThanOrEqual(4_900);
    expect(after).toBeLessThan(7_500);
    await sink.shutdown();
  }, 20_000);

  it("gathers the queue's batches into one request per 2048 spans, every id as the spans have it", async () => {
    receiver = await startReceiver();
    vi.stubEnv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.url);
    const sink = createOtelSink();
    // Two requests' trees interleaved, so that the ids the encoder remembers change often; a
    // turn of the event loop now and then, as a server's requests give the queue.
    const a = ExecContext.create({ traceSink: sink });
    const b = ExecContext.create({ traceSink: sink });
    for (let i = 0; i < 1050; i++) {
      for (const ctx of [a, b]) {
        await ctx.span(`step${i % 3}`, (child) => child.startSpan("leaf").end());
      }
      if (i % 64 === 0) await new Promise(setImmediate);
    }
    const ended = [...a.spans, ...b.spans];
    expect(ended).toHaveLength(4200);
    // Two full requests leave on their own (32 batches of 64 each); the rest on the flush.
    await vi.waitFor(() => expect(receiver!.received.length).toBe(2));
    expect(sink.droppedSpans).toBe(0);
    await sink.forceFlush();
    const requests = receiver.received.map((r) => decodedSpans(decodeTraceRequest(r.body)));
    // A request leaves once 2048 spans are written: by then the last batch may have added a few.
    const sizes = requests.map((spans) => spans.length);
    expect(sizes).toHaveLength(3);
    for (const size of sizes.slice(0, 2)) expect(size).toBeGreaterThanOrEqual(2048);
    for (const size of sizes.slice(0, 2)) expect(size).toBeLessThan(2048 + 64);
    expect(sizes[0]! + sizes[1]! + sizes[2]!).toBe(4200);
    const sent = requests.flat().map((s) => [s.traceId, s.spanId, s.parentSpanId ?? null]);
    expect(sent.sort()).toEqual(ended.map((s) => [s.traceId, s.id, s.parentId]).sort());
    await sink.shutdown();
  });

  it("sends a quiet app's few spans after the delay, and reports a failure nobody awaits", async () => {
    receiver = await startReceiver();
    receiver.status = 400; // not retried
    vi.stubEnv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.url);
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const errors: Error[] = [];
      const sink = createOtelSink({ onExportError: (e) => errors.push(e) });
      await flightWorld().request("flight", { traceSink: sink });
      await vi.advanceTimersByTimeAsync(5000); // the queue's delay: its batch is written
      expect(receiver.received).toHaveLength(0);
      await vi.advanceTimersByTimeAsync(5000); // the exporter's: the request leaves
      await vi.waitFor(() => expect(errors).toHaveLength(1));
      expect(receiver.received).toHaveLength(1);
      expect(decodedSpans(decodeTraceRequest(receiver.received[0]!.body)).length).toBeGreaterThan(
        3,
      );
      receiver.status = 200;
      await sink.shutdown().catch(() => undefined);
    } finally {
      vi.useRealTimers();
    }
  });

  it("fails loudly through the official transport: forceFlush rejects UNAVAILABLE", async () => {
    receiver = await startReceiver();
    receiver.status = 400; // not retried
    const errors: Error[] = [];
    vi.stubEnv("OTEL_EXPORTER_OTLP_ENDPOINT", `http://127.0.0.1:${receiver.port}`);
    const sink = createOtelSink({ onExportError: (e) => errors.push(e) });
    await flightWorld().request("flight", { traceSink: sink });
    const err = await sink.forceFlush().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(NervaError);
    expect((err as NervaError).code).toBe("UNAVAILABLE");
    expect(errors).toHaveLength(1);
    expect(receiver.received[0]?.path).toBe("/v1/traces");
    receiver.status = 200;
    await sink.shutdown().catch(() => undefined);
  });

  it("startNervaOtel: the app's spans and Nerva's in one protobuf request, in one tree", async () => {
    receiver = await startReceiver();
    const otel = startNervaOtel({ serviceName: "flights", url: receiver.url });
    try {
      const world = flightWorld({
        inTool: async () => {
          await sleep(1);
          trace.getTracer("db-client").startSpan("SELECT flights").end();
        },
      });
      const { ctx } = await world.request("flight", { traceSink: otel.sink });
      await otel.shutdown();
      const spans = receiver.received.flatMap((r) => decodedSpans(decodeTraceRequest(r.body)));
      expect(spans).toHaveLength(ctx.spans.length + 1);
      const db = spans.find((s) => s.name === "SELECT flights")!;
      const tool = spans.find((s) => s.name === "execute_tool search_flights")!;
      expect(db.traceId).toBe(ctx.traceId);
      expect(db.parentSpanId).toBe(tool.spanId);
    } finally {
      await otel.shutdown().catch(() => undefined);
    }
  });
});
