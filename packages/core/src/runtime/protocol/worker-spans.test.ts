// WorkerSpans against a real context and trace sink: what a worker's `span` frames become, and
// every bound it must not get past (ids, parents, sizes, counts, times, usage).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ExecContext } from "../../context/exec-context.js";
import type { ContextEvent } from "../../context/events.js";
import type { Span } from "../../context/span.js";
import type { TraceSink } from "../../tracing/sink.js";
import {
  WorkerEventSchema,
  WorkerSpanSchema,
  type WorkerEventWireInput,
  type WorkerSpanWireInput,
} from "./frames.js";
import {
  EVENTS_DROPPED_EVENT,
  SPANS_DROPPED_EVENT,
  WORKER_SPAN_LIMITS,
  WorkerSpans,
} from "./worker-spans.js";

/** A sink that keeps what it heard, in order. */
class Recorder implements TraceSink {
  readonly calls: string[] = [];
  readonly ended: Span[] = [];
  onSpanStart(span: Span): void {
    this.calls.push(`start ${span.name}`);
  }
  onSpanEnd(span: Span): void {
    this.calls.push(`end ${span.name}`);
    this.ended.push(span);
  }
  onEvent(event: ContextEvent): void {
    this.calls.push(`event ${event.name}`);
  }
}

function invocation() {
  const sink = new Recorder();
  const ctx = ExecContext.create({ userId: "u1", traceSink: sink });
  const handle = ctx.startSpan("handle");
  const inv = ctx.fork({ span: handle }).startSpan("runtime.invoke", { handler: "w" });
  const scoped = ctx.fork({ span: inv, agentName: "w" });
  const spans = new WorkerSpans(scoped, "w");
  const add = (span: WorkerSpanWireInput) => spans.add(WorkerSpanSchema.parse(span));
  const addEvent = (event: WorkerEventWireInput) => spans.addEvent(WorkerEventSchema.parse(event));
  /** Spans adopted from the worker: every span of the tree but the two local ones. */
  const adopted = () => ctx.spans.filter((s) => s !== handle && s !== inv);
  return { ctx, sink, handle, inv, scoped, spans, add, addEvent, adopted };
}

const nowS = () => Date.now() / 1000;
const span = (
  id: string,
  parent: string | null,
  extra: Partial<WorkerSpanWireInput> = {},
): WorkerSpanWireInput => ({
  span_id: id,
  parent_id: parent,
  name: `s-${id.slice(0, 8)}`,
  started_at: nowS(),
  ended_at: nowS(),
  ...extra,
});

/** The local ancestors of `s`, up to a local root. */
function chain(s: Span): Span[] {
  const out: Span[] = [];
  for (let p = s.parentSpan; p !== null; p = p.parentSpan) out.push(p);
  return out;
}

const A = "aaaaaaaaaaaaaaaa";
const B = "bbbbbbbbbbbbbbbb";
const C = "cccccccccccccccc";

describe("WorkerSpans: a worker's spans join the caller's trace", () => {
  it("rebuilds the tree from spans that arrive children first, telling the sink parents first", () => {
    const { inv, add, spans, adopted, sink, ctx } = invocation();
    const t = nowS();
    add(span(C, B, { name: "leaf", started_at: t, ended_at: t, kind: "client" }));
    add(span(B, A, { name: "mid", started_at: t, ended_at: t, attributes: { n: 1, ok: true } }));
    expect(adopted()).toHaveLength(0); // their parents have not arrived yet
    add(span(A, inv.id, { name: "top", started_at: t, ended_at: t, status: "error", error: "x" }));
    spans.finish();
    const [top, mid, leaf] = adopted();
    expect([top?.name, mid?.name, leaf?.name]).toEqual(["top", "mid", "leaf"]);
    expect([top?.id, mid?.id, leaf?.id]).toEqual([A, B, C]);
    expect(top?.parentSpan).toBe(inv);
    expect(mid?.parentSpan).toBe(top);
    expect(leaf?.parentSpan).toBe(mid);
    expect(leaf?.kind).toBe("client");
    expect(mid?.attributes).toEqual({ n: 1, ok: true });
    expect(top?.status).toBe("error");
    expect(top?.error).toBe("x");
    for (const s of adopted()) {
      expect(s.traceId).toBe(ctx.traceId);
      expect(s.userId).toBe("u1");
      expect(s.ended).toBe(true);
    }
    expect(sink.calls.slice(-6)).toEqual([
      "start top",
      "start mid",
      "start leaf",
      "end leaf",
      "end mid",
      "end top",
    ]);
  });

  it("adopts at once a child whose parent is already there", () => {
    const { inv, add, adopted } = invocation();
    add(span(A, inv.id));
    add(span(B, A));
    expect(adopted().map((s) => s.parentSpan?.id)).toEqual([inv.id, A]);
  });

  it("replaces bad ids consistently: one fresh id for a bad id and every reference to it", () => {
    const { inv, add, spans, adopted } = invocation();
    const bad = ["XYZ", "ABCDEFABCDEFABCD", "0000000000000000", "a".repeat(17), ""];
    for (const id of bad) add(span(`${id}-child`, id)); // children first, bad parent ids
    for (const id of bad) add(span(id, inv.id));
    spans.finish();
    const all = adopted();
    expect(new Set(all.map((s) => s.id)).size).toBe(all.length);
    for (const s of all) expect(s.id).toMatch(/^(?!0{16}$)[0-9a-f]{16}$/);
    const parents = all.filter((s) => s.parentSpan === inv);
    expect(parents).toHaveLength(bad.length);
    const children = all.filter((s) => s.parentSpan !== inv);
    expect(children.map((c) => c.parentSpan)).toEqual(
      bad.map((_, i) => parents[i]), // each child under the span that took its parent's bad id
    );
  });

  it("gives a fresh id to a duplicate, and to a span claiming the invocation's id", () => {
    const { inv, add, spans, adopted } = invocation();
    add(span(A, inv.id, { name: "first" }));
    add(span(A, inv.id, { name: "again" }));
    add(span(inv.id, inv.id, { name: "impostor" }));
    add(span(B, A, { name: "child" }));
    spans.finish();
    const byName = new Map(adopted().map((s) => [s.name, s]));
    expect(byName.get("first")?.id).toBe(A);
    expect(byName.get("again")?.id).not.toBe(A);
    expect(byName.get("impostor")?.id).not.toBe(inv.id);
    expect(byName.get("impostor")?.parentSpan).toBe(inv);
    expect(byName.get("child")?.parentSpan).toBe(byName.get("first"));
    expect(new Set(adopted().map((s) => s.id)).size).toBe(4);
  });

  it("keeps ids unique across the invocations of one request", () => {
    const first = invocation();
    first.add(span(A, first.inv.id));
    first.spans.finish();
    const inv2 = first.ctx.startSpan("runtime.invoke");
    const second = new WorkerSpans(first.ctx.fork({ span: inv2 }), "w");
    second.add(WorkerSpanSchema.parse(span(A, inv2.id, { name: "second" })));
    second.finish();
    const ids = first.ctx.spans.map((s) => s.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("nests unknown, missing, self and cyclic parents under the invocation's span", () => {
    const { inv, add, spans, adopted, sink } = invocation();
    add(span(A, "1111111111111111", { name: "orphan" }));
    add(span(B, null, { name: "null-parent" }));
    add(span(C, C, { name: "self" }));
    add(span("dddddddddddddddd", "eeeeeeeeeeeeeeee", { name: "cycle-d" }));
    add(span("eeeeeeeeeeeeeeee", "dddddddddddddddd", { name: "cycle-e" }));
    add(span("ffffffffffffffff", A, { name: "under-orphan" }));
    spans.finish();
    const all = adopted();
    expect(all).toHaveLength(6);
    for (const s of all) expect(chain(s)).toContain(inv); // never dangling
    const byName = new Map(all.map((s) => [s.name, s]));
    expect(byName.get("orphan")?.parentSpan).toBe(inv);
    expect(byName.get("null-parent")?.parentSpan).toBe(inv);
    expect(byName.get("self")?.parentSpan).toBe(inv);
    expect(byName.get("under-orphan")?.parentSpan).toBe(byName.get("orphan"));
    const d = byName.get("cycle-d") as Span;
    const e = byName.get("cycle-e") as Span;
    expect([d.parentSpan, e.parentSpan]).toContain(inv); // the cycle is cut once
    expect(sink.ended.filter((s) => all.includes(s))).toHaveLength(6);
  });

  it("keeps 1,000 spans of 5,000, then records one worker.spans_dropped event with the count", () => {
    const { inv, add, spans, adopted, ctx } = invocation();
    for (let i = 0; i < 5000; i++) add(span(i.toString(16).padStart(16, "1"), inv.id));
    spans.addDropped(250); // spans the worker itself left out
    expect(ctx.events.filter((e) => e.name === SPANS_DROPPED_EVENT)).toHaveLength(0);
    spans.finish();
    spans.finish();
    expect(adopted()).toHaveLength(WORKER_SPAN_LIMITS.maxSpans);
    const events = ctx.events.filter((e) => e.name === SPANS_DROPPED_EVENT);
    expect(events).toHaveLength(1);
    expect(events[0]?.attributes).toMatchObject({ handler: "w", count: 4250, limit: 1000 });
    expect(events[0]?.spanId).toBe(inv.id);
    add(span("9999999999999999", inv.id)); // after the end: only counted
    expect(adopted()).toHaveLength(WORKER_SPAN_LIMITS.maxSpans);
  });

  it("cuts names, attribute keys and values and errors; keeps at most 64 attributes", () => {
    const { inv, add, spans, adopted } = invocation();
    const attributes: Record<string, string | number> = {};
    for (let i = 0; i < 10_000; i++) attributes[`k${i}`] = i;
    attributes["k0"] = "v".repeat(100_000);
    add(span(A, inv.id, { name: "n".repeat(100_000), attributes, error: "e".repeat(100_000) }));
    add(span(B, inv.id, { name: "", attributes: { ["x".repeat(1000)]: true } }));
    spans.finish();
    const [big, small] = adopted();
    expect(big?.name).toHaveLength(256);
    expect(Object.keys(big?.attributes ?? {})).toHaveLength(64);
    expect(big?.attributes["k0"]).toHaveLength(4096);
    expect(big?.attributes["nerva.attributes_dropped"]).toBe(10_000 - 63);
    expect(big?.error).toHaveLength(4096);
    expect(big?.status).toBe("error"); // an error without a status is a failure
    expect(small?.name).toBe("(unnamed)");
    expect(Object.keys(small?.attributes ?? {})).toEqual(["x".repeat(256)]);
  });

  it("clamps times to the invocation's window", () => {
    const { inv, add, spans, adopted } = invocation();
    add(span(A, inv.id, { started_at: 0, ended_at: 1e300 }));
    add(span(B, inv.id, { started_at: -5, ended_at: -10 }));
    add(span(C, inv.id, { started_at: 4e12, ended_at: 1 }));
    const before = Date.now();
    spans.finish();
    for (const s of adopted()) {
      expect(s.startMs).toBeGreaterThanOrEqual(inv.startMs);
      expect(s.endMs as number).toBeGreaterThanOrEqual(s.startMs);
      expect(s.endMs as number).toBeLessThanOrEqual(before + 1);
    }
  });

  it("clamps spans that arrive after the invocation span ended to its end", () => {
    const { inv, add, spans, adopted } = invocation();
    inv.end();
    add(span(A, inv.id, { started_at: 0, ended_at: nowS() + 3600 }));
    spans.finish();
    const [s] = adopted();
    expect(s?.endMs).toBe(inv.endMs);
    expect(s?.startMs).toBe(inv.startMs);
  });
});

const event = (
  name: string,
  spanId: string | null,
  extra: Partial<WorkerEventWireInput> = {},
): WorkerEventWireInput => ({ name, at: nowS(), span_id: spanId, ...extra });

describe("WorkerSpans: a worker's events", () => {
  it("land on the span they name: the invocation's at once, a worker span's between its start and its end", () => {
    const { inv, sink, addEvent, add, spans, ctx, adopted } = invocation();
    addEvent(event("started", null, { attributes: { n: 1 } }));
    addEvent(event("on.invoke", inv.id));
    expect(ctx.events.map((e) => [e.name, e.spanId])).toEqual([
      ["started", inv.id],
      ["on.invoke", inv.id],
    ]);
    // Events happen before the span they are in ends, so they arrive before its frame.
    addEvent(event("thought", B, { attributes: { model: "tiny", ok: true } }));
    expect(ctx.events).toHaveLength(2);
    add(span(B, A, { name: "child" }));
    add(span(A, inv.id, { name: "parent" }));
    const child = adopted().find((s) => s.name === "child") as Span;
    const thought = ctx.events.find((e) => e.name === "thought");
    expect(thought).toMatchObject({ spanId: child.id, attributes: { model: "tiny", ok: true } });
    expect(thought?.traceId).toBe(ctx.traceId);
    expect(sink.calls.slice(-5)).toEqual([
      "start parent",
      "start child",
      "event thought",
      "end child",
      "end parent",
    ]);
    // Once the span is there, an event naming it lands at once.
    addEvent(event("late.thought", B));
    expect(ctx.events.at(-1)).toMatchObject({ name: "late.thought", spanId: child.id });
    spans.finish();
  });

  it("follow a bad span id to the fresh id its span gets; one naming no span of this invocation lands on the invocation's span when it ends", () => {
    const { inv, addEvent, add, spans, ctx, adopted } = invocation();
    addEvent(event("on.bad", "not-a-span-id"));
    addEvent(event("on.missing", C));
    addEvent(event("on.zero", "0000000000000000"));
    add(span("not-a-span-id", inv.id, { name: "bad" }));
    const bad = adopted().find((s) => s.name === "bad") as Span;
    expect(bad.id).not.toBe("not-a-span-id");
    expect(ctx.events.find((e) => e.name === "on.bad")?.spanId).toBe(bad.id);
    expect(ctx.events.some((e) => e.name === "on.missing")).toBe(false);
    spans.finish();
    expect(ctx.events.find((e) => e.name === "on.missing")?.spanId).toBe(inv.id);
    expect(ctx.events.find((e) => e.name === "on.zero")?.spanId).toBe(inv.id);
    const known = new Set(ctx.spans.map((s) => s.id));
    for (const e of ctx.events) expect(known.has(e.spanId as string)).toBe(true);
  });

  it("keeps 1,000, then records one worker.events_dropped event with the count; cuts names and attributes; clamps times", () => {
    const { inv, addEvent, spans, ctx } = invocation();
    const attributes: Record<string, string | number> = {};
    for (let i = 0; i < 1000; i++) attributes[`k${i}`] = i;
    attributes["k0"] = "v".repeat(100_000);
    addEvent(event("n".repeat(100_000), null, { attributes, at: 0 }));
    addEvent(event("", null, { at: 1e300 }));
    for (let i = 2; i < 1500; i++) addEvent(event(`e${i}`, null));
    spans.addDropped(0, 20); // events the worker itself left out
    spans.finish();
    addEvent(event("after", null)); // after the end: only counted
    const mine = ctx.events.filter((e) => e.name !== EVENTS_DROPPED_EVENT);
    expect(mine).toHaveLength(WORKER_SPAN_LIMITS.maxEvents);
    const [big, unnamed] = mine;
    expect(big?.name).toHaveLength(256);
    expect(Object.keys(big?.attributes ?? {})).toHaveLength(64);
    expect(big?.attributes["k0"]).toHaveLength(4096);
    expect(big?.timestampMs).toBe(inv.startMs);
    expect(unnamed?.name).toBe("(unnamed)");
    expect(unnamed?.timestampMs).toBeLessThanOrEqual(Date.now());
    const dropped = ctx.events.filter((e) => e.name === EVENTS_DROPPED_EVENT);
    expect(dropped).toHaveLength(1);
    expect(dropped[0]).toMatchObject({
      spanId: inv.id,
      attributes: { handler: "w", count: 500 + 20, limit: 1000 },
    });
    expect(spans.droppedEvents).toBe(521);
  });
});

describe("WorkerSpans: usage is charged once", () => {
  it("moves a span's usage from the invocation span: the request total does not change", () => {
    const { ctx, inv, scoped, add, spans, adopted, handle } = invocation();
    // What the usage frames charged (the host records them on the invocation's context).
    scoped.recordTokens({ promptTokens: 100, completionTokens: 50, costUsd: 0.5 });
    scoped.recordTokens({ promptTokens: 10, completionTokens: 5, cachedInputTokens: 4 });
    const usage = (p: number, c: number, cost: number, cached = 0) => ({
      prompt_tokens: p,
      completion_tokens: c,
      cost_usd: cost,
      cached_input_tokens: cached,
    });
    add(span(B, A, { usage: usage(60, 30, 0.25, 4) }));
    add(span(A, inv.id, { usage: usage(20, 10, 0.05) }));
    spans.finish();
    const [a, b] = adopted() as [Span, Span];
    expect(b.usage).toMatchObject({ promptTokens: 60, completionTokens: 30, cachedInputTokens: 4 });
    expect(a.usage).toMatchObject({ promptTokens: 20, completionTokens: 10, totalTokens: 30 });
    expect(a.totalUsage).toMatchObject({
      promptTokens: 80,
      completionTokens: 40,
      totalTokens: 120,
    });
    expect(a.totalUsage.costUsd).toBeCloseTo(0.3, 12);
    expect(inv.usage).toMatchObject({ promptTokens: 30, completionTokens: 15, totalTokens: 45 });
    expect(inv.totalUsage).toMatchObject({ promptTokens: 110, completionTokens: 55 });
    expect(handle.totalUsage).toMatchObject({ promptTokens: 110, completionTokens: 55 });
    expect(ctx.tokenUsage).toMatchObject({ promptTokens: 110, completionTokens: 55 });
    const own = ctx.spans.reduce((n, s) => n + s.usage.totalTokens, 0);
    expect(own).toBe(ctx.tokenUsage.totalTokens);
  });

  it("never takes more than the usage frames charged, whatever a span claims", () => {
    const { ctx, inv, scoped, add, spans, adopted } = invocation();
    scoped.recordTokens({ promptTokens: 10, completionTokens: 1, costUsd: 0.01 });
    const lie = { prompt_tokens: 1_000_000, completion_tokens: 1_000_000, cost_usd: 99 };
    add(span(A, inv.id, { usage: lie }));
    add(span(B, inv.id, { usage: lie }));
    spans.finish();
    const [a, b] = adopted() as [Span, Span];
    expect(a.usage).toMatchObject({ promptTokens: 10, completionTokens: 1, costUsd: 0.01 });
    expect(b.usage.totalTokens).toBe(0);
    expect(inv.usage.totalTokens).toBe(0);
    expect(ctx.tokenUsage).toMatchObject({
      promptTokens: 10,
      completionTokens: 1,
      totalTokens: 11,
    });
  });
});

/** Ids a random worker may use: good ones, bad ones, the invocation's (filled in per run). */
const idPool = [A, B, C, "dddddddddddddddd", "XYZ", "0000000000000000", "Q".repeat(16), "INV"];
const wireSpan = fc.record({
  span_id: fc.constantFrom(...idPool),
  parent_id: fc.option(fc.constantFrom(...idPool, "1234123412341234"), { nil: null }),
  name: fc.string({ maxLength: 300 }),
  // Any time JSON can carry, far in the past or the future (the sum stays finite).
  offset: fc.oneof(fc.double({ min: -1e300, max: 1e300, noNaN: true }), fc.integer()),
  length: fc.oneof(fc.double({ min: -1e300, max: 1e300, noNaN: true }), fc.nat(1000)),
  status: fc.option(fc.constantFrom("unset", "ok", "error"), { nil: undefined }),
  attrs: fc.nat(80),
  tokens: fc.option(fc.nat(10_000), { nil: undefined }),
});

describe("WorkerSpans: property", () => {
  it("any sequence of span frames gives a bounded tree under the invocation, charged once", () => {
    fc.assert(
      fc.property(fc.array(wireSpan, { maxLength: 60 }), fc.nat(20_000), (frames, charged) => {
        const { ctx, inv, scoped, add, spans, adopted, sink } = invocation();
        scoped.recordTokens({ promptTokens: charged, completionTokens: 0 });
        const now = nowS();
        for (const f of frames) {
          const attributes: Record<string, number> = {};
          for (let i = 0; i < f.attrs; i++) attributes[`a${i}`] = i;
          const id = (v: string) => (v === "INV" ? inv.id : v);
          add({
            span_id: id(f.span_id),
            parent_id: f.parent_id === null ? null : id(f.parent_id),
            name: f.name,
            started_at: now + f.offset,
            ended_at: now + f.offset + f.length,
            ...(f.status === undefined ? {} : { status: f.status as "ok" }),
            attributes,
            ...(f.tokens === undefined ? {} : { usage: { prompt_tokens: f.tokens } }),
          });
        }
        spans.finish();
        const all = adopted();
        expect(all).toHaveLength(Math.min(frames.length, WORKER_SPAN_LIMITS.maxSpans));
        const ids = ctx.spans.map((s) => s.id);
        expect(new Set(ids).size).toBe(ids.length);
        for (const s of all) {
          expect(chain(s)).toContain(inv);
          expect(s.traceId).toBe(ctx.traceId);
          expect(s.id).toMatch(/^(?!0{16}$)[0-9a-f]{16}$/);
          expect(s.name.length).toBeGreaterThan(0);
          expect(s.name.length).toBeLessThanOrEqual(256);
          expect(Object.keys(s.attributes).length).toBeLessThanOrEqual(64);
          expect(s.startMs).toBeGreaterThanOrEqual(inv.startMs);
          expect(s.endMs as number).toBeGreaterThanOrEqual(s.startMs);
          expect(["ok", "error"]).toContain(s.status);
        }
        // the sink heard of each adopted span once, started before it ended
        expect(sink.ended.filter((s) => all.includes(s))).toHaveLength(all.length);
        const own = ctx.spans.reduce((n, s) => n + s.usage.promptTokens, 0);
        expect(own).toBe(charged);
        expect(inv.totalUsage.promptTokens).toBe(charged);
        expect(ctx.tokenUsage.promptTokens).toBe(charged);
      }),
      { numRuns: 300 },
    );
  });
});
