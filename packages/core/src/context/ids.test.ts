import { describe, expect, it } from "vitest";
import { SPAN_ID, TRACE_ID } from "../types/trace.js";
import { ExecContext } from "./exec-context.js";
import { newRequestId, newSpanId, newTraceId, randomInt32, spanIdOf } from "./ids.js";

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("ids", () => {
  it("writes well-formed, distinct ids across many pool refills", () => {
    // 70k of each crosses the 64 KiB random pool several times.
    const requests = new Set<string>();
    const traces = new Set<string>();
    const spans = new Set<string>();
    for (let i = 0; i < 70_000; i++) {
      const r = newRequestId();
      const t = newTraceId();
      const s = newSpanId();
      expect(UUID_V4.test(r) && TRACE_ID.test(t) && SPAN_ID.test(s)).toBe(true);
      requests.add(r);
      traces.add(t);
      spans.add(s);
    }
    expect([requests.size, traces.size, spans.size]).toEqual([70_000, 70_000, 70_000]);
  });

  it("formats int32 halves as 16 hex digits, high half first", () => {
    expect(spanIdOf(0, 1)).toBe("0000000000000001");
    expect(spanIdOf(-1, 0x0abcdef0)).toBe("ffffffff0abcdef0");
    expect(spanIdOf(0x12345678, -0x80000000)).toBe("1234567880000000");
  });

  it("draws int32 values covering the whole range", () => {
    let negative = 0;
    let large = 0;
    for (let i = 0; i < 10_000; i++) {
      const v = randomInt32();
      expect(Number.isInteger(v) && v >= -0x80000000 && v <= 0x7fffffff).toBe(true);
      if (v < 0) negative++;
      if (Math.abs(v) > 0x40000000) large++;
    }
    // Uniform bits: about half negative, about half beyond 2^30 in magnitude.
    expect(negative).toBeGreaterThan(4_000);
    expect(large).toBeGreaterThan(4_000);
  });
});

describe("span ids", () => {
  it("are written on first read, then the same string on every read", () => {
    const ctx = ExecContext.create();
    const span = ctx.startSpan("work");
    const id = span.id;
    expect(id).toMatch(SPAN_ID);
    expect(span.id).toBe(id);
    expect(span.toWire().span_id).toBe(id);
  });

  it("link children to their parent span, and the root to a remote parent", () => {
    const ctx = ExecContext.create({
      traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    });
    const outer = ctx.startSpan("outer");
    const inner = ctx.fork({ span: outer }).startSpan("inner");
    expect(outer.parentId).toBe("00f067aa0ba902b7");
    expect(inner.parentId).toBe(outer.id);
    expect(ctx.fork({ span: outer }).currentSpanId).toBe(outer.id);
    expect(ctx.fork({ span: outer }).toWire().span_id).toBe(outer.id);
    expect(new Set(ctx.spans.map((s) => s.id)).size).toBe(2);
  });
});
