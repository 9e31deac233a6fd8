// Spans across the process boundary with real processes: a pooled Node worker's spans, and an
// executable's hostile `span` frames, come back under the invocation's `runtime.invoke` span,
// bounded, without ever breaking the host.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExecContext } from "../../context/exec-context.js";
import type { Span } from "../../context/span.js";
import { MemoryTraceSink } from "../../tracing/memory-sink.js";
import { SubprocessRuntime } from "../subprocess/subprocess-runtime.js";
import { EVENTS_DROPPED_EVENT, SPANS_DROPPED_EVENT } from "./worker-spans.js";

const dir = join(dirname(fileURLToPath(import.meta.url)), "fixtures", "worker-spans");

function request() {
  const sink = new MemoryTraceSink();
  const ctx = ExecContext.create({ userId: "u1", traceSink: sink });
  const invokeSpan = () => ctx.spans.find((s) => s.name === "runtime.invoke") as Span;
  const below = (parent: Span) => ctx.spans.filter((s) => s.parentSpan === parent);
  return { sink, ctx, invokeSpan, below };
}

/** True when `s` nests (at any depth) under `ancestor`. */
const under = (s: Span, ancestor: Span): boolean => {
  for (let p = s.parentSpan; p !== null; p = p.parentSpan) if (p === ancestor) return true;
  return false;
};

describe("spans from a pooled Node worker", () => {
  let runtime: SubprocessRuntime;
  beforeAll(async () => {
    runtime = new SubprocessRuntime({ handlerDir: dir, pool: { min: 1, max: 1 } });
    await runtime.warmUp();
  });
  afterAll(() => runtime.close());

  it("come back as real spans under runtime.invoke, in the sink, with usage charged once", async () => {
    const { sink, ctx, invokeSpan, below } = request();
    const result = await runtime.invoke("spans", { message: "go", args: { fail: "1" } }, ctx);
    expect(result.status).toBe("success");
    const inv = invokeSpan();
    expect(inv.kind).toBe("client");
    const [plan, broken] = below(inv);
    expect(plan?.name).toBe("plan");
    expect(plan?.attributes).toMatchObject({ stage: "first", model: "tiny" });
    const [step] = below(plan as Span);
    expect(step).toMatchObject({ name: "plan.step", kind: "client", status: "ok" });
    expect(step?.attributes).toEqual({ n: 1, ok: true });
    expect(broken).toMatchObject({ name: "broken", status: "error", error: "nope" });
    for (const s of [plan, step, broken] as Span[]) {
      expect(s.traceId).toBe(ctx.traceId);
      expect(s.startMs).toBeGreaterThanOrEqual(inv.startMs);
      expect(s.endMs as number).toBeLessThanOrEqual(inv.endMs as number);
      expect(sink.spans).toContain(s);
    }
    // Usage: charged once (usage frames), and placed on the span that spent it.
    expect(ctx.tokenUsage).toMatchObject({ promptTokens: 8, completionTokens: 4, totalTokens: 12 });
    expect(plan?.usage).toMatchObject({
      promptTokens: 7,
      completionTokens: 3,
      cachedInputTokens: 2,
      costUsd: 0.002,
    });
    expect(inv.usage).toMatchObject({ promptTokens: 1, completionTokens: 1 });
    expect(inv.totalUsage).toMatchObject({ promptTokens: 8, completionTokens: 4 });
    expect(inv.totalUsage.cachedInputTokens).toBe(2);
    expect(inv.usage.cachedInputTokens).toBe(0);
    const own = ctx.spans.reduce((n, s) => n + s.usage.totalTokens, 0);
    expect(own).toBe(ctx.tokenUsage.totalTokens);
    // The sink saw the worker's spans end before the invocation's span.
    expect(sink.spans.indexOf(plan as Span)).toBeLessThan(sink.spans.indexOf(inv));
  });

  it("keeps 1,000 spans of a handler that makes 5,000; the worker counts the rest", async () => {
    const { ctx, invokeSpan } = request();
    const result = await runtime.invoke("spans", { message: "go", args: { count: "5000" } }, ctx);
    expect(result.status).toBe("success");
    const inv = invokeSpan();
    const mine = ctx.spans.filter((s) => under(s, inv));
    expect(mine).toHaveLength(1000);
    const dropped = ctx.events.filter((e) => e.name === SPANS_DROPPED_EVENT);
    expect(dropped).toHaveLength(1);
    expect(dropped[0]?.attributes["count"]).toBe(5002 - 1000);
  });

  it("its events land on the span they happened in, before that span ends in the sink", async () => {
    const sink = new MemoryTraceSink();
    const heard: string[] = [];
    const ctx = ExecContext.create({
      userId: "u1",
      traceSink: {
        onSpanEnd: (span) => {
          heard.push(`end ${span.name}`);
          sink.onSpanEnd(span);
        },
        onEvent: (e) => void heard.push(`event ${e.name}`),
      },
    });
    const result = await runtime.invoke("spans", { message: "go" }, ctx);
    expect(result.status).toBe("success");
    const inv = ctx.spans.find((s) => s.name === "runtime.invoke") as Span;
    const plan = ctx.spans.find((s) => s.name === "plan") as Span;
    expect(ctx.events.map((e) => [e.name, e.spanId, e.attributes])).toEqual([
      ["plan.thought", plan.id, { n: 1, idea: "split" }],
      ["spanned", inv.id, { total: 2 }],
    ]);
    for (const e of ctx.events) {
      expect(e.traceId).toBe(ctx.traceId);
      expect(e.timestampMs).toBeGreaterThanOrEqual(inv.startMs);
    }
    expect(heard.indexOf("event plan.thought")).toBeLessThan(heard.indexOf("end plan"));
    expect(heard.indexOf("event spanned")).toBeLessThan(heard.indexOf("end runtime.invoke"));
  });

  it("keeps 1,000 events of a handler that records 3,000; the worker counts the rest", async () => {
    const { ctx } = request();
    const result = await runtime.invoke("spans", { message: "go", args: { events: "3000" } }, ctx);
    expect(result.status).toBe("success");
    const many = ctx.events.filter((e) => e.name.startsWith("many."));
    // plan.thought and the first 999 of the loop were sent; the rest (and "spanned") counted.
    expect(many).toHaveLength(999);
    const dropped = ctx.events.filter((e) => e.name === EVENTS_DROPPED_EVENT);
    expect(dropped.map((e) => e.attributes["count"])).toEqual([3002 - 1000]);
  });

  it("drops a span that ends after the result; the same worker serves the next call", async () => {
    const first = request();
    const pid = (await runtime.invoke("spans", { message: "a", args: { late: "1" } }, first.ctx))
      .status;
    expect(pid).toBe("success");
    await new Promise((r) => setTimeout(r, 100));
    const second = request();
    const result = await runtime.invoke("spans", { message: "b" }, second.ctx);
    expect(result.status).toBe("success");
    expect(first.ctx.spans.some((s) => s.name === "late")).toBe(false);
    expect(runtime.stats().pool.started).toBe(1);
  });
});

describe("hostile span frames from an executable", () => {
  let runtime: SubprocessRuntime;
  beforeAll(() => {
    runtime = new SubprocessRuntime({ handlerDir: dir, pool: { min: 0 }, timeoutSeconds: 20 });
  });
  afterAll(() => runtime.close());

  const call = async (scenario: string) => {
    const r = request();
    const result = await runtime.invoke("frames", { message: "x", args: { scenario } }, r.ctx);
    const inv = r.invokeSpan();
    const byName = new Map(r.ctx.spans.filter((s) => under(s, inv)).map((s) => [s.name, s]));
    return { ...r, result, inv, byName };
  };

  it("bad ids: replaced consistently; duplicates and impostors get fresh ids", async () => {
    const { result, inv, byName, ctx } = await call("bad_ids");
    expect(result).toMatchObject({ status: "success", output: "sent 6" });
    expect(byName.get("s-kid-of-bad")?.parentSpan).toBe(byName.get("bad"));
    expect(byName.get("bad")?.id).toMatch(/^[0-9a-f]{16}$/);
    expect(byName.get("upper")?.id).not.toBe("ABCDEFABCDEFABCD");
    expect(byName.get("impostor")?.id).not.toBe(inv.id);
    expect(byName.get("one")?.id).toBe("1111111111111111");
    expect(byName.get("dup")?.id).not.toBe("1111111111111111");
    const ids = ctx.spans.map((s) => s.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("unknown, missing and cyclic parents: nested under runtime.invoke, never dangling", async () => {
    const { result, inv, byName } = await call("unknown_parents");
    expect(result.status).toBe("success");
    expect(byName.size).toBe(4);
    expect(byName.get("orphan")?.parentSpan).toBe(inv);
    expect(byName.get("rootless")?.parentSpan).toBe(inv);
    for (const s of byName.values()) expect(under(s, inv)).toBe(true);
  });

  it("5,000 spans: 1,000 kept and one worker.spans_dropped event", async () => {
    const { result, byName, ctx, inv } = await call("flood");
    expect(result).toMatchObject({ status: "success", output: "sent 5000" });
    expect(ctx.spans.filter((s) => under(s, inv))).toHaveLength(1000);
    expect(byName.size).toBeGreaterThan(0);
    const events = ctx.events.filter((e) => e.name === SPANS_DROPPED_EVENT);
    expect(events.map((e) => e.attributes["count"])).toEqual([4000]);
  });

  it("a megabyte name and 100,000 attributes: cut to 256 characters and 64 attributes", async () => {
    const { result, ctx, inv } = await call("huge");
    expect(result.status).toBe("success");
    const [big] = ctx.spans.filter((s) => under(s, inv));
    expect(big?.name).toHaveLength(256);
    expect(Object.keys(big?.attributes ?? {})).toHaveLength(64);
  });

  it("times far in the past and the future: clamped to the invocation's window", async () => {
    const { result, byName, inv } = await call("times");
    expect(result.status).toBe("success");
    for (const name of ["past", "future"]) {
      const s = byName.get(name) as Span;
      expect(s.startMs).toBeGreaterThanOrEqual(inv.startMs);
      expect(s.endMs as number).toBeLessThanOrEqual(inv.endMs as number);
    }
  });

  it("deep JSON: refused before any recursive parsing, as a protocol error; the next call works", async () => {
    const { result, inv, ctx } = await call("deep");
    expect(result.status).toBe("error");
    expect(result.error).toMatch(/Frame too complex \(nested deeper than 65 levels\)/);
    expect(ctx.spans.filter((s) => under(s, inv))).toHaveLength(0);
    const again = await call("times");
    expect(again.result.status).toBe("success");
  });
});
