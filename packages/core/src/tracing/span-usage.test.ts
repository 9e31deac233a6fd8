import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { runWork as run, workAt } from "./work-tree.test-support.js";
import type { Span } from "../context/span.js";
import { MemoryTraceSink } from "./memory-sink.js";

const work = workAt(4);

const sum = (spans: readonly Span[], pick: (s: Span) => number): number =>
  spans.reduce((n, s) => n + pick(s), 0);

describe("usage on spans", () => {
  it("root totalUsage = ctx.tokenUsage = the sum of every span's own usage (never twice)", async () => {
    await fc.assert(
      fc.asyncProperty(work, async (tree) => {
        const sink = new MemoryTraceSink();
        const ctx = ExecContext.create({ traceSink: sink });
        await run(tree, ctx, "n");
        const root = sink.spans.find((s) => s.isLocalRoot)!;
        const total = ctx.tokenUsage;
        expect(root.totalUsage.promptTokens).toBe(total.promptTokens);
        expect(root.totalUsage.completionTokens).toBe(total.completionTokens);
        expect(root.totalUsage.totalTokens).toBe(total.totalTokens);
        expect(root.totalUsage.costUsd).toBeCloseTo(total.costUsd, 9);
        expect(sum(sink.spans, (s) => s.usage.totalTokens)).toBe(total.totalTokens);
        // every span's subtree total = its own + its children's subtree totals
        for (const span of sink.spans) {
          const children = sink.spans.filter((s) => s.parentSpan === span);
          expect(span.totalUsage.totalTokens).toBe(
            span.usage.totalTokens + sum(children, (c) => c.totalUsage.totalTokens),
          );
        }
      }),
      { numRuns: 150 },
    );
  });

  it("keeps cached and reasoning tokens, model and provider on the span that spent them", () => {
    const ctx = ExecContext.create();
    const outer = ctx.startSpan("handle");
    const chat = ctx.fork({ span: outer }).startSpan("chat");
    ctx.fork({ span: chat }).recordTokens({
      promptTokens: 100,
      completionTokens: 40,
      cachedInputTokens: 60,
      reasoningTokens: 10,
      model: "gpt-4o-mini",
      provider: "openai",
      costUsd: 0.001,
    });
    chat.end();
    outer.end();
    expect(chat.usage).toEqual({
      promptTokens: 100,
      completionTokens: 40,
      totalTokens: 140,
      costUsd: 0.001,
      cachedInputTokens: 60,
      reasoningTokens: 10,
    });
    expect(chat.attributes).toMatchObject({ model: "gpt-4o-mini", provider: "openai" });
    expect(outer.usage.totalTokens).toBe(0);
    expect(outer.totalUsage.cachedInputTokens).toBe(60);
    expect(Object.isFrozen(chat.usage)).toBe(true);
    expect(ctx.tokenUsage.totalTokens).toBe(140);
  });

  it("rejects a bad delta field with INVALID_INPUT and adds nothing", () => {
    const ctx = ExecContext.create();
    const span = ctx.startSpan("chat");
    const inner = ctx.fork({ span });
    expect(() => inner.recordTokens({ promptTokens: 1, reasoningTokens: -1 })).toThrow(
      /reasoningTokens/,
    );
    expect(() => inner.recordTokens({ model: "" })).toThrow(/model/);
    expect(span.usage.totalTokens).toBe(0);
    expect(ctx.tokenUsage.totalTokens).toBe(0);
  });

  it("reads identity from the tree, not a copy per span", () => {
    const ctx = ExecContext.create({ userId: "u1", sessionId: "s1" });
    const span = ctx.child("a").startSpan("x");
    expect([span.userId, span.sessionId, span.traceId]).toEqual(["u1", "s1", ctx.traceId]);
  });
});

describe("traceparent", () => {
  const caller = "0af7651916cd43dd8448eb211c80319c";

  it("points outgoing calls at the current span, keeping the caller's sampled flag", () => {
    const ctx = ExecContext.create({ traceparent: `00-${caller}-b7ad6b7169203331-00` });
    expect(ctx.sampled).toBe(false);
    const span = ctx.startSpan("http.call");
    const inner = ctx.fork({ span });
    expect(inner.traceparent()).toBe(`00-${caller}-${span.id}-00`);
    expect(span.sampled).toBe(false);
    expect(span.isLocalRoot).toBe(true);
    expect(span.parentId).toBe("b7ad6b7169203331");
  });

  it("is sampled by default and null with no span to point at", () => {
    const ctx = ExecContext.create();
    expect(ctx.sampled).toBe(true);
    expect(ctx.traceparent()).toBeNull();
    const span = ctx.startSpan("x");
    expect(ctx.fork({ span }).traceparent()).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
  });

  it("carries the sampled flag across the wire, and the sink to a rebuilt context", () => {
    const ctx = ExecContext.create({ traceparent: `00-${caller}-b7ad6b7169203331-00` });
    const wire = ctx.toWire();
    expect(wire.sampled).toBe(false);
    const sink = new MemoryTraceSink();
    const back = ExecContext.fromWire(JSON.parse(JSON.stringify(wire)), { traceSink: sink });
    expect(back.sampled).toBe(false);
    back.startSpan("remote.work").end();
    expect(sink.spans[0]!.traceId).toBe(caller);
    expect(ExecContext.create().toWire().sampled).toBeUndefined();
    expect(ExecContext.fromWire(ExecContext.create().toWire()).sampled).toBe(true);
  });
});
