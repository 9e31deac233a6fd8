// Each Nerva span → exactly one OTel span with the same ids, named and attributed as issue 13 §4
// maps them; read back from OpenTelemetry's own InMemorySpanExporter.
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { describe, expect, it } from "vitest";
import { ExecContext, InProcessRuntime } from "@nerva/core";
import { createOtelSink } from "../src/index.js";
import { flightWorld, memoryExport, one } from "./world.test-support.js";

const CALLER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

async function exported(options: Parameters<typeof createOtelSink>[0] = {}, message = "flight") {
  const { exporter, processor } = memoryExport();
  const sink = createOtelSink({ spanProcessors: [processor], ...options });
  const { ctx, response } = await flightWorld().request(message, { traceSink: sink });
  return { ctx, response, spans: exporter.getFinishedSpans(), sink };
}

const byId = (spans: readonly ReadableSpan[]) =>
  new Map(spans.map((s) => [s.spanContext().spanId, s]));

describe("createOtelSink: the mapping of §4", () => {
  it("exports each Nerva span once, with the same trace id, span id and parent", async () => {
    const { ctx, spans } = await exported();
    expect(spans).toHaveLength(ctx.spans.length);
    const otel = byId(spans);
    for (const span of ctx.spans) {
      const o = otel.get(span.id);
      expect(o, span.name).toBeDefined();
      expect(o!.spanContext().traceId).toBe(ctx.traceId);
      expect(o!.parentSpanContext?.spanId).toBe(span.parentId ?? undefined);
      expect(o!.startTime).toEqual([Math.trunc(span.startMs / 1000), expect.any(Number)]);
      expect(o!.instrumentationScope.name).toBe("@nerva/otel");
    }
  });

  it("names workflow, agent and tool spans by the GenAI conventions and keeps the others", async () => {
    const { ctx, spans } = await exported();
    expect(spans.map((s) => s.name).sort()).toEqual(
      [
        "delegate",
        "execute_tool calendar",
        "execute_tool search_flights",
        "invoke_agent calendar_agent",
        "invoke_agent flight_agent",
        "invoke_workflow nerva",
        "memory.recall",
        "memory.store",
        "memory.store",
        "responder.format",
        "router.classify",
        "tools.discover",
      ].sort(),
    );
    const workflow = one(spans, "invoke_workflow nerva");
    expect(workflow.kind).toBe(SpanKind.INTERNAL);
    expect(workflow.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_workflow",
      "gen_ai.workflow.name": "nerva",
      "gen_ai.conversation.id": "s1",
    });
    expect(one(spans, "invoke_agent flight_agent").attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": "flight_agent",
      "gen_ai.conversation.id": "s1",
    });
    const tool = one(spans, "execute_tool search_flights");
    expect(tool.kind).toBe(SpanKind.INTERNAL);
    expect(tool.attributes).toMatchObject({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "search_flights",
      "gen_ai.tool.call.id": "call_1",
      "gen_ai.tool.type": "function",
      "nerva.status": "success",
    });
    // The bare Nerva attribute a GenAI one replaces is not repeated.
    expect(tool.attributes).not.toHaveProperty("nerva.tool");
    const delegate = one(spans, "delegate");
    expect(delegate.attributes).toMatchObject({
      "nerva.handler": "calendar_agent",
      "nerva.from": "flight_agent",
    });
    expect(delegate.attributes).not.toHaveProperty("gen_ai.operation.name");
    // The request id once, where the request starts in this process.
    expect(spans.filter((s) => s.attributes["nerva.request_id"] !== undefined)).toEqual([
      one(spans, "invoke_workflow nerva"),
    ]);
    expect(one(spans, "invoke_workflow nerva").attributes["nerva.request_id"]).toBe(ctx.requestId);
  });

  it("puts own usage under gen_ai.usage.* and subtree totals on workflow and agent spans", async () => {
    const { ctx, spans } = await exported();
    const flight = one(spans, "invoke_agent flight_agent").attributes;
    expect(flight).toMatchObject({
      "gen_ai.usage.input_tokens": 120,
      "gen_ai.usage.output_tokens": 30,
      "gen_ai.usage.cache_read.input_tokens": 100,
      "nerva.usage.cost_usd": 0.002,
      "nerva.usage.total.input_tokens": 160,
      "nerva.usage.total.output_tokens": 40,
    });
    expect(flight["nerva.usage.total.cost_usd"]).toBeCloseTo(0.0025, 10);
    expect(one(spans, "invoke_agent calendar_agent").attributes).toMatchObject({
      "gen_ai.usage.input_tokens": 40,
      "nerva.usage.total.input_tokens": 40,
    });
    const workflow = one(spans, "invoke_workflow nerva").attributes;
    // The root's subtree total is the request's usage, counted once.
    expect(workflow["nerva.usage.total.input_tokens"]).toBe(ctx.tokenUsage.promptTokens);
    expect(workflow["nerva.usage.total.output_tokens"]).toBe(ctx.tokenUsage.completionTokens);
    expect(workflow).not.toHaveProperty("gen_ai.usage.input_tokens");
    // Spans that spent nothing carry no usage.
    expect(one(spans, "execute_tool calendar").attributes).not.toHaveProperty(
      "gen_ai.usage.input_tokens",
    );
    // Nor do the totals of a tree that spent nothing: no attribute reads as zero.
    const broken = await exported({}, "broken");
    for (const name of ["invoke_workflow nerva", "invoke_agent broken_agent"]) {
      expect(Object.keys(one(broken.spans, name).attributes), name).not.toContain(
        "nerva.usage.total.input_tokens",
      );
    }
  });

  it("turns ctx.event() into span events of the span it was recorded under", async () => {
    const { spans, sink } = await exported();
    expect(one(spans, "invoke_agent flight_agent").events).toEqual([
      { name: "flight.searching", time: expect.any(Array), attributes: { to: "BER" } },
    ]);
    expect(sink.droppedEvents).toBe(0);
  });

  it("marks failures with status ERROR and error.type", async () => {
    const { spans } = await exported({}, "broken");
    const tool = one(spans, "execute_tool broken");
    expect(tool.status.code).toBe(SpanStatusCode.ERROR);
    expect(tool.attributes["error.type"]).toBe("error");
    const agent = one(spans, "invoke_agent broken_agent");
    expect(agent.status).toEqual({
      code: SpanStatusCode.ERROR,
      message: expect.stringContaining("tool said"),
    });
    expect(agent.attributes["error.type"]).toBe("error");
    expect(one(spans, "router.classify").status.code).toBe(SpanStatusCode.UNSET);

    // A handler that runs past its deadline: error.type is the result's status.
    const { exporter, processor } = memoryExport();
    const runtime = new InProcessRuntime({ timeoutSeconds: 0.02 });
    runtime.register(
      "slow",
      (_i, ctx) => new Promise<string>((r) => ctx.signal.addEventListener("abort", () => r(""))),
    );
    const ctx = ExecContext.create({ traceSink: createOtelSink({ spanProcessors: [processor] }) });
    await runtime.invoke("slow", { message: "hi" }, ctx);
    const slow = one(exporter.getFinishedSpans(), "invoke_agent slow");
    expect(slow.status.code).toBe(SpanStatusCode.ERROR);
    expect(slow.attributes["error.type"]).toBe("timeout");
  });

  it("joins the caller's trace under the span of its traceparent", async () => {
    const { exporter, processor } = memoryExport();
    const sink = createOtelSink({ spanProcessors: [processor] });
    const { ctx } = await flightWorld().request("flight", { traceSink: sink, traceparent: CALLER });
    const root = one(exporter.getFinishedSpans(), "invoke_workflow nerva");
    expect(ctx.traceId).toBe("0af7651916cd43dd8448eb211c80319c");
    expect(root.spanContext().traceId).toBe("0af7651916cd43dd8448eb211c80319c");
    expect(root.parentSpanContext).toMatchObject({ spanId: "b7ad6b7169203331", isRemote: true });
    expect(one(exporter.getFinishedSpans(), "tools.discover").parentSpanContext?.isRemote).toBe(
      false,
    );
  });

  it("exports nothing of a trace whose caller did not sample it", async () => {
    const { exporter, processor } = memoryExport();
    const sink = createOtelSink({ spanProcessors: [processor] });
    const { ctx } = await flightWorld().request("flight", {
      traceSink: sink,
      traceparent: CALLER.replace(/-01$/, "-00"),
    });
    expect(ctx.spans.length).toBeGreaterThan(5);
    expect(exporter.getFinishedSpans()).toEqual([]);
    // ...and the trace's events are not kept waiting for spans that are never exported.
    expect(sink.droppedEvents).toBe(0);
  });

  it("spans: 'genai' keeps GenAI spans only, each under its nearest kept ancestor", async () => {
    const { ctx, spans } = await exported({ spans: "genai" });
    expect(spans.map((s) => s.name).sort()).toEqual([
      "execute_tool calendar",
      "execute_tool search_flights",
      "invoke_agent calendar_agent",
      "invoke_agent flight_agent",
      "invoke_workflow nerva",
    ]);
    const id = (name: string) => one(spans, name).spanContext().spanId;
    const parent = (name: string) => one(spans, name).parentSpanContext?.spanId;
    // The delegate span is gone: the calendar agent hangs under the flight agent.
    expect(parent("invoke_agent calendar_agent")).toBe(id("invoke_agent flight_agent"));
    expect(parent("execute_tool calendar")).toBe(id("invoke_agent calendar_agent"));
    expect(parent("invoke_agent flight_agent")).toBe(id("invoke_workflow nerva"));
    expect(parent("invoke_workflow nerva")).toBeUndefined();
    // Ids are still the Nerva spans' own.
    const nerva = ctx.spans.find(
      (s) => s.name === "runtime.invoke" && s.attributes.handler === "calendar_agent",
    );
    expect(id("invoke_agent calendar_agent")).toBe(nerva?.id);
  });

  it("spans: 'genai' moves the events of a dropped span to its kept ancestor", async () => {
    const { exporter, processor } = memoryExport();
    const sink = createOtelSink({ spanProcessors: [processor], spans: "genai" });
    const runtime = new InProcessRuntime();
    runtime.register("agent", async (_i, ctx) => {
      await ctx.span("lookup", (inner) => {
        inner.event("cache.miss", { key: "k" });
      });
      return "ok";
    });
    await runtime.invoke("agent", { message: "hi" }, ExecContext.create({ traceSink: sink }));
    const [agent] = exporter.getFinishedSpans();
    expect(agent?.name).toBe("invoke_agent agent");
    expect(agent?.events.map((e) => e.name)).toEqual(["cache.miss"]);
  });

  it("exports enduser.id only with includeUserId, and content only with captureContent", async () => {
    const withContent = (sink: ReturnType<typeof createOtelSink>) => {
      const ctx = ExecContext.create({ userId: "u-42", traceSink: sink });
      const span = ctx.startSpan("chat", {
        "gen_ai.request.model": "gpt-test",
        "gen_ai.input.messages": '[{"role":"user","content":"secret"}]',
        "gen_ai.output.messages": '[{"role":"assistant","content":"answer"}]',
      });
      span.end();
    };
    const plain = memoryExport();
    withContent(createOtelSink({ spanProcessors: [plain.processor] }));
    const [chat] = plain.exporter.getFinishedSpans();
    expect(chat?.name).toBe("chat gpt-test");
    expect(chat?.kind).toBe(SpanKind.CLIENT);
    expect(chat?.attributes).not.toHaveProperty("enduser.id");
    expect(chat?.attributes).not.toHaveProperty("gen_ai.input.messages");
    expect(chat?.attributes).not.toHaveProperty("gen_ai.output.messages");
    expect(chat?.attributes["gen_ai.request.model"]).toBe("gpt-test");

    const opted = memoryExport();
    withContent(
      createOtelSink({
        spanProcessors: [opted.processor],
        includeUserId: true,
        captureContent: true,
      }),
    );
    expect(opted.exporter.getFinishedSpans()[0]?.attributes).toMatchObject({
      "enduser.id": "u-42",
      "gen_ai.input.messages": '[{"role":"user","content":"secret"}]',
      "gen_ai.output.messages": '[{"role":"assistant","content":"answer"}]',
    });
  });

  it("with an exporter: exports in batches, later, with the given resource", async () => {
    const exporter = new InMemorySpanExporter();
    const sink = createOtelSink({
      exporter,
      resource: resourceFromAttributes({ "deployment.environment.name": "test" }),
      serviceName: "flights",
    });
    await flightWorld().request("flight", { traceSink: sink });
    // Deferred: nothing is exported on the request path.
    expect(exporter.getFinishedSpans()).toEqual([]);
    await sink.forceFlush();
    const spans = exporter.getFinishedSpans();
    expect(spans.length).toBe(12);
    expect(spans[0]?.resource.attributes).toMatchObject({
      "service.name": "flights",
      "deployment.environment.name": "test",
    });
    await sink.shutdown();
  });

  it("hands nothing to its processors after shutdown, and shuts them down once", async () => {
    let ended = 0;
    let shutdowns = 0;
    const counting = {
      onStart() {},
      onEnd() {
        ended++;
      },
      forceFlush: () => Promise.resolve(),
      shutdown: () => {
        shutdowns++;
        return Promise.resolve();
      },
    };
    const sink = createOtelSink({ spanProcessors: [counting] });
    await flightWorld().request("flight", { traceSink: sink });
    expect(ended).toBe(12);
    await sink.shutdown();
    await sink.shutdown();
    await flightWorld().request("flight", { traceSink: sink });
    expect({ ended, shutdowns }).toEqual({ ended: 12, shutdowns: 1 });
  });
});
