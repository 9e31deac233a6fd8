// runInSpan: while a handler or tool runs, its Nerva span is OpenTelemetry's active span, so that
// spans the app (or an instrumentation) creates there nest under it — across awaits.
import { setTimeout as sleep } from "node:timers/promises";
import { context, createContextKey, propagation, SpanKind, trace } from "@opentelemetry/api";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { ExecContext, InProcessRuntime } from "@nerva/core";
import { activeTraceparent, createOtelSink } from "../src/index.js";
import { appTracer, registerAppTracing } from "./otel-app.test-support.js";
import { flightWorld, memoryExport, one } from "./world.test-support.js";

const { exporter, processor } = memoryExport();
const unregister = registerAppTracing(processor);
afterAll(unregister);
beforeEach(() => exporter.reset());

/** An app span started where the code runs, after an await, as a database client would. */
async function appSpan(name: string): Promise<void> {
  await sleep(1);
  await appTracer().startActiveSpan(name, async (span) => {
    await sleep(1);
    span.end();
  });
}

describe("runInSpan: the Nerva span is the active OpenTelemetry span", () => {
  it("app spans inside a tool nest under execute_tool, inside a handler under invoke_agent", async () => {
    const sink = createOtelSink({ spanProcessors: [processor] });
    const world = flightWorld({
      inTool: () => appSpan("db.flights"),
      inHandler: () => appSpan("cache.get"),
    });
    const { ctx } = await world.request("flight", { traceSink: sink });
    const spans = exporter.getFinishedSpans();
    const tool = one(spans, "execute_tool search_flights");
    const agent = one(spans, "invoke_agent flight_agent");
    const db = one(spans, "db.flights");
    const cache = one(spans, "cache.get");
    expect(db.instrumentationScope.name).toBe("app");
    expect(db.spanContext().traceId).toBe(ctx.traceId);
    expect(db.parentSpanContext?.spanId).toBe(tool.spanContext().spanId);
    expect(cache.parentSpanContext?.spanId).toBe(agent.spanContext().spanId);
    // Nerva's tree is unchanged by the app's spans.
    expect(spans).toHaveLength(ctx.spans.length + 2);
  });

  it("keeps the caller's context values in the handler, and lets the app derive its own", async () => {
    const sink = createOtelSink({ spanProcessors: [processor] });
    const runtime = new InProcessRuntime();
    const TENANT = createContextKey("tenant");
    const seen: unknown[] = [];
    runtime.register("agent", async () => {
      await sleep(1);
      const active = context.active();
      const span = trace.getActiveSpan();
      seen.push(
        active.getValue(TENANT),
        propagation.getBaggage(active)?.getEntry("plan")?.value,
        span?.isRecording(),
        span?.spanContext().spanId,
        span?.spanContext() === span?.spanContext(), // made once
        active.setValue(TENANT, "other").getValue(TENANT),
        active.deleteValue(TENANT).getValue(TENANT),
        trace.getSpan(trace.deleteSpan(active)),
        trace.getSpan(active.setValue(TENANT, 1)) === span,
      );
      return "ok";
    });
    const ctx = ExecContext.create({ traceSink: sink });
    const outer = propagation.setBaggage(
      context.active().setValue(TENANT, "acme"),
      propagation.createBaggage({ plan: { value: "pro" } }),
    );
    await context.with(outer, () => runtime.invoke("agent", { message: "hi" }, ctx));
    const id = ctx.spans[0]!.id;
    expect(seen).toEqual(["acme", "pro", false, id, true, "other", undefined, undefined, true]);
  });

  it("activeTraceparent() names the running Nerva span inside a handler, and nothing outside", async () => {
    const sink = createOtelSink({ spanProcessors: [processor] });
    const runtime = new InProcessRuntime();
    let inside: string | null = null;
    runtime.register("agent", async () => {
      await sleep(1);
      inside = activeTraceparent();
      return "ok";
    });
    const ctx = ExecContext.create({ traceSink: sink });
    await runtime.invoke("agent", { message: "hi" }, ctx);
    const span = ctx.spans[0]!;
    expect(inside).toBe(`00-${ctx.traceId}-${span.id}-01`);
    expect(activeTraceparent()).toBeNull();
  });

  it("a trace the caller did not sample stays unsampled in the app's spans too", async () => {
    const sink = createOtelSink({ spanProcessors: [processor] });
    let inside: string | null = null;
    await flightWorld({
      inTool: async () => {
        inside = activeTraceparent();
        await appSpan("db.flights");
      },
    }).request("flight", {
      traceSink: sink,
      traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00",
    });
    expect(inside).toMatch(/^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-00$/);
    expect(exporter.getFinishedSpans()).toEqual([]);
  });

  it("an app span open around a request becomes the parent of its root via activeTraceparent", async () => {
    const sink = createOtelSink({ spanProcessors: [processor] });
    const world = flightWorld();
    await appTracer().startActiveSpan("POST /chat", { kind: SpanKind.SERVER }, async (server) => {
      await world.request("flight", { traceSink: sink, traceparent: activeTraceparent() });
      server.end();
    });
    const spans = exporter.getFinishedSpans();
    const server = one(spans, "POST /chat");
    const root = one(spans, "invoke_workflow nerva");
    expect(root.spanContext().traceId).toBe(server.spanContext().traceId);
    expect(root.parentSpanContext?.spanId).toBe(server.spanContext().spanId);
  });
});
