// Spans from inside a container, on a real Docker engine: the Nerva agent sends each span of a
// module handler as a `span` frame, and the host adopts it under the invocation's span, in warm
// and per-call mode.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExecContext } from "../../context/exec-context.js";
import type { Span } from "../../context/span.js";
import { MemoryTraceSink } from "../../tracing/memory-sink.js";
import { EVENTS_DROPPED_EVENT, SPANS_DROPPED_EVENT } from "../protocol/worker-spans.js";
import { ContainerRuntime } from "./container-runtime.js";
import { dockerTestImage } from "./test-env.test-support.js";

const image = await dockerTestImage("ContainerRuntime span tests");

describe.skipIf(image === null)("spans from a container handler", () => {
  let runtime: ContainerRuntime;
  beforeAll(async () => {
    runtime = new ContainerRuntime({ timeoutSeconds: 30, circuitBreaker: false });
    const module = "/modules/spans.mjs";
    runtime.register("spans", { image: image as string, module, mode: "warm" });
    runtime.register("spans-once", { image: image as string, module });
    await runtime.start();
  });
  afterAll(() => runtime.close());

  const call = async (handler: string, args: Record<string, string> = {}) => {
    const sink = new MemoryTraceSink();
    const ctx = ExecContext.create({ userId: "u1", traceSink: sink, timeoutSeconds: 60 });
    const result = await runtime.invoke(handler, { message: "go", args }, ctx);
    const inv = ctx.spans.find((s) => s.name === "runtime.invoke") as Span;
    return {
      sink,
      ctx,
      result,
      inv,
      below: (p: Span) => ctx.spans.filter((s) => s.parentSpan === p),
    };
  };

  for (const handler of ["spans", "spans-once"]) {
    it(`${handler}: the agent's spans come back under runtime.invoke, usage charged once`, async () => {
      const { sink, ctx, result, inv, below } = await call(handler);
      expect(result.status).toBe("success");
      expect(inv.kind).toBe("client");
      const [plan] = below(inv);
      expect(plan).toMatchObject({ name: "plan", status: "ok", traceId: ctx.traceId });
      expect(plan?.attributes).toEqual({ model: "tiny" });
      const [step] = below(plan as Span);
      expect(step?.name).toBe("plan.step");
      expect(step?.attributes).toEqual({ n: 1, ok: true });
      for (const s of [plan, step] as Span[]) {
        expect(sink.spans).toContain(s);
        expect(s.startMs).toBeGreaterThanOrEqual(inv.startMs);
        expect(s.endMs as number).toBeLessThanOrEqual(inv.endMs as number);
      }
      expect(ctx.tokenUsage).toMatchObject({ promptTokens: 8, completionTokens: 4 });
      expect(plan?.usage).toMatchObject({ promptTokens: 7, completionTokens: 3, costUsd: 0.002 });
      expect(inv.usage).toMatchObject({ promptTokens: 1, completionTokens: 1 });
      expect(inv.totalUsage.totalTokens).toBe(ctx.tokenUsage.totalTokens);
      // Events come back on the span they happened in.
      expect(ctx.events.map((e) => [e.name, e.spanId, e.attributes])).toEqual([
        ["plan.thought", plan?.id, { n: 1, idea: "split" }],
        ["spanned", inv.id, { total: 2 }],
      ]);
      expect(sink.events.map((e) => e.name)).toEqual(["plan.thought", "spanned"]);
      // The agent reads the context's deadline and start from the wire's Unix seconds.
      expect(result.data["span_id"]).toBe(inv.id);
      // (the handler's deadline: its 30 s timeout, inside the request's 60 s).
      const deadline = Number(result.data["timeout_at"]);
      expect(deadline).toBeGreaterThan(Date.now());
      expect(deadline).toBeLessThanOrEqual(ctx.timeoutAt as number);
      expect(Number(result.data["created_at"])).toBe(ctx.createdAt);
      expect(Number(result.data["remaining_ms"])).toBeGreaterThan(0);
      expect(Number(result.data["remaining_ms"])).toBeLessThanOrEqual(30_000);
    });
  }

  it("keeps 1,000 spans of a handler that makes 3,000; the agent counts the rest", async () => {
    const { ctx, inv } = await call("spans", { count: "3000" });
    let n = 0;
    for (const s of ctx.spans) {
      for (let p = s.parentSpan; p !== null; p = p.parentSpan) if (p === inv) n++;
    }
    expect(n).toBe(1000);
    const events = ctx.events.filter((e) => e.name === SPANS_DROPPED_EVENT);
    expect(events.map((e) => e.attributes["count"])).toEqual([3002 - 1000]);
  });

  it("keeps 1,000 events of a handler that records 3,000; the agent counts the rest", async () => {
    const { ctx } = await call("spans", { events: "3000" });
    // plan.thought and the first 999 of the loop were sent; the rest (and "spanned") counted.
    expect(ctx.events.filter((e) => e.name.startsWith("many."))).toHaveLength(999);
    const dropped = ctx.events.filter((e) => e.name === EVENTS_DROPPED_EVENT);
    expect(dropped.map((e) => e.attributes["count"])).toEqual([3002 - 1000]);
  });
});
