import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ExecContext } from "../context/exec-context.js";
import { formatTraceparent, newSpanId, newTraceId } from "../context/ids.js";
import { isNervaError } from "../errors.js";
import { Orchestrator } from "../orchestrator/orchestrator.js";
import { RuleRouter } from "../router/rule-router.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { FunctionToolManager, defineTool } from "../tools/function-tool-manager.js";
import { TraceStore } from "./trace-store.js";

/** A real orchestrator whose agent calls a tool and delegates; "fail" makes the tool throw. */
function travelDesk() {
  const runtime = new InProcessRuntime();
  const tools = new FunctionToolManager().register(
    defineTool({
      name: "search_flights",
      description: "Finds flights",
      parameters: z.object({ to: z.string() }),
      run: ({ to }) => {
        if (to === "Atlantis") throw new Error("no airport serves Atlantis");
        return [`NV101 to ${to}`];
      },
    }),
  );
  const orchestrator = new Orchestrator({
    router: new RuleRouter({ rules: [{ handler: "trip_agent", pattern: ".*" }] }),
    runtime,
    tools,
  });
  runtime.register("calendar_agent", (_input, ctx) => {
    ctx.recordTokens({ promptTokens: 40, completionTokens: 10, costUsd: 0.0004 });
    return "free on Tuesday";
  });
  runtime.register(
    "trip_agent",
    orchestrator.handler(async (input, ctx, kit) => {
      ctx.recordTokens({ promptTokens: 100, completionTokens: 20, costUsd: 0.001 });
      ctx.event("trip.planned", { to: input.message });
      const found = await kit.tools.call("search_flights", { to: input.message });
      if (found.status !== "success") return { status: "error", error: found.error ?? "failed" };
      const when = await runtime.delegate("calendar_agent", { message: "when?" }, ctx);
      return `${String(found.output)} ${when.output}`;
    }),
  );
  return { orchestrator, close: () => runtime.close() };
}

describe("TraceStore", () => {
  it("keeps a request's trace whole: root, timing, status, usage, user, spans in tree order, events", async () => {
    const desk = travelDesk();
    const store = new TraceStore();
    const ctx = ExecContext.create({ userId: "alice", sessionId: "s1", traceSink: store });
    const result = await desk.orchestrator.handle("Lisbon", ctx);
    expect(result.status).toBe("success");

    const [summary] = store.traces();
    expect(summary).toMatchObject({
      traceId: ctx.traceId,
      rootName: "handle",
      status: "ok",
      errorCount: 0,
      userId: "alice",
      sessionId: "s1",
      openSpanCount: 0,
      eventCount: 1,
      droppedSpans: 0,
      usage: { promptTokens: 140, completionTokens: 30, totalTokens: 170 },
    });
    expect(summary!.usage.costUsd).toBeCloseTo(0.0014, 9);
    expect(summary!.durationMs).toBeGreaterThan(0);

    const detail = store.trace(ctx.traceId)!;
    const rows = detail.spans.map((s) => `${" ".repeat(s.depth)}${s.name}`);
    expect(rows[0]).toBe("handle");
    // tree order: each span right after its parent's earlier children, one level deeper
    const invoke = detail.spans.findIndex(
      (s) => s.name === "runtime.invoke" && s.attributes["handler"] === "trip_agent",
    );
    const at = (name: string) => detail.spans.findIndex((s) => s.name === name);
    expect(detail.spans[invoke]!.depth).toBe(1);
    expect(detail.spans[at("tools.call")]!).toMatchObject({
      depth: 2,
      parentId: detail.spans[invoke]!.id,
    });
    expect(detail.spans[at("delegate")]!.depth).toBe(2);
    expect(at("delegate")).toBeGreaterThan(at("tools.call"));
    expect(detail.spans.length).toBe(summary!.spanCount);
    for (const span of detail.spans.slice(1)) {
      const parent = detail.spans.findIndex((p) => p.id === span.parentId);
      expect(parent).toBeGreaterThanOrEqual(0);
      expect(parent).toBeLessThan(detail.spans.indexOf(span));
    }
    expect(detail.spans[0]!.totalUsage.totalTokens).toBe(170);
    expect(detail.spans[invoke]!.usage.totalTokens).toBe(120);
    expect(detail.events).toEqual([
      expect.objectContaining({
        name: "trip.planned",
        spanId: detail.spans[invoke]!.id,
        attributes: { to: "Lisbon" },
      }),
    ]);
    await desk.close();
  });

  it("marks a failing request and its error spans", async () => {
    const desk = travelDesk();
    const store = new TraceStore();
    const ctx = ExecContext.create({ userId: "bob", traceSink: store });
    const result = await desk.orchestrator.handle("Atlantis", ctx);
    expect(result.status).toBe("error");
    const detail = store.trace(ctx.traceId)!;
    const tool = detail.spans.find((s) => s.name === "tools.call")!;
    expect(tool.status).toBe("error");
    expect(detail.errorCount).toBeGreaterThanOrEqual(1);
    expect(detail.spans.find((s) => s.name === "delegate")).toBeUndefined();
    await desk.close();
  });

  it("shows spans that have not ended as open, and their end later", () => {
    const store = new TraceStore();
    const ctx = ExecContext.create({ traceSink: store });
    const root = ctx.startSpan("handle");
    const child = ctx.fork({ span: root }).startSpan("runtime.invoke");
    child.end("error", "boom");
    let summary = store.traces()[0]!;
    expect(summary).toMatchObject({ status: "open", durationMs: null, openSpanCount: 1 });
    expect(store.trace(ctx.traceId)!.spans.map((s) => [s.name, s.status, s.depth])).toEqual([
      ["handle", "open", 0],
      ["runtime.invoke", "error", 1],
    ]);
    root.end();
    summary = store.traces()[0]!;
    expect(summary).toMatchObject({ status: "ok", openSpanCount: 0, errorCount: 1 });
    expect(summary.durationMs).toBeCloseTo(root.durationMs!, 6);
  });

  it("lists traces newest first, by user, up to a limit", () => {
    const store = new TraceStore();
    const ids: string[] = [];
    for (const userId of ["a", "b", null, "a"]) {
      const ctx = ExecContext.create({ userId, traceSink: store });
      ctx.startSpan("handle").end();
      ids.push(ctx.traceId);
    }
    expect(store.traces().map((t) => t.traceId)).toEqual([...ids].reverse());
    expect(store.traces({ limit: 2 }).map((t) => t.traceId)).toEqual([ids[3], ids[2]]);
    expect(store.traces({ userId: "a" }).map((t) => t.traceId)).toEqual([ids[3], ids[0]]);
    expect(store.traces({ userId: null }).map((t) => t.traceId)).toEqual([ids[2]]);
    expect(store.trace(newTraceId())).toBeNull();
    expect(store.trace("not a trace id")).toBeNull();
  });

  it("drops the oldest trace past maxTraces, and counts it", () => {
    const store = new TraceStore({ maxTraces: 3 });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const ctx = ExecContext.create({ traceSink: store });
      ctx.startSpan(`request ${i}`).end();
      ids.push(ctx.traceId);
    }
    expect(store.size).toBe(3);
    expect(store.droppedTraces).toBe(2);
    expect(store.traces().map((t) => t.rootName)).toEqual(["request 4", "request 3", "request 2"]);
    expect(store.trace(ids[0]!)).toBeNull();
  });

  it("keeps a trace's first spans and events past its limits, counting each dropped one once", () => {
    const store = new TraceStore({ maxSpansPerTrace: 3, maxEventsPerTrace: 2 });
    const ctx = ExecContext.create({ traceSink: store });
    const root = ctx.startSpan("root");
    const inner = ctx.fork({ span: root });
    const a = inner.startSpan("a");
    const b = inner.startSpan("b");
    const c = inner.startSpan("c"); // no room at start: counted when it ends, once
    for (const s of [a, b, c]) s.end();
    inner.startSpan("d").end();
    root.end();
    for (let i = 0; i < 4; i++) inner.event(`e${i}`);
    const detail = store.trace(ctx.traceId)!;
    expect(detail.spans.map((s) => s.name)).toEqual(["root", "a", "b"]);
    expect(detail).toMatchObject({ droppedSpans: 2, droppedEvents: 2, eventCount: 2 });
    expect(detail.events.map((e) => e.name)).toEqual(["e0", "e1"]);
    expect(store.droppedSpans).toBe(2);
    expect(store.droppedEvents).toBe(2);
    store.clear();
    expect([store.size, store.droppedSpans, store.droppedEvents]).toEqual([0, 0, 0]);
  });

  it("treats a span whose parent is remote (traceparent) as a root", async () => {
    const store = new TraceStore();
    const traceId = newTraceId();
    const ctx = ExecContext.create({
      traceSink: store,
      traceparent: formatTraceparent(traceId, newSpanId(), true),
    });
    await ctx.span("handle", async (inner) => inner.startSpan("router.classify").end());
    const detail = store.trace(traceId)!;
    expect(detail.rootName).toBe("handle");
    expect(detail.spans.map((s) => s.depth)).toEqual([0, 1]);
  });

  it("refuses bad options with INVALID_OPTIONS and bad queries with INVALID_INPUT, naming the field", () => {
    for (const options of [{ maxTraces: 0 }, { maxSpansPerTrace: 1.5 }, { maxEvents: 3 }]) {
      try {
        new TraceStore(options as never);
        expect.unreachable();
      } catch (err) {
        expect(isNervaError(err) && err.code).toBe("INVALID_OPTIONS");
        expect((err as Error).message).toMatch(/options(\.max|: Unrecognized key: "maxEvents")/);
      }
    }
    expect(() => new TraceStore().traces({ limit: -1 })).toThrow(/query\.limit/);
  });

  it("puts every span of random trees in tree order once, at its depth", async () => {
    interface Node {
      children: Node[];
    }
    const nodeAt = (depth: number): fc.Arbitrary<Node> =>
      fc.record({
        children: depth === 0 ? fc.constant([]) : fc.array(nodeAt(depth - 1), { maxLength: 3 }),
      });
    await fc.assert(
      fc.asyncProperty(nodeAt(4), fc.boolean(), async (tree, leaveOpen) => {
        const store = new TraceStore();
        const ctx = ExecContext.create({ traceSink: store });
        const depthOf = new Map<string, number>();
        const open: { end(): void }[] = [];
        const walk = (node: Node, at: ExecContext, depth: number): void => {
          const span = at.startSpan(`n${depth}`);
          depthOf.set(span.id, depth);
          for (const child of node.children) walk(child, at.fork({ span }), depth + 1);
          if (leaveOpen && depth === 1) open.push(span);
          else span.end();
        };
        walk(tree, ctx, 0);
        const detail = store.trace(ctx.traceId)!;
        expect(detail.spans.length).toBe(depthOf.size);
        expect(new Set(detail.spans.map((s) => s.id)).size).toBe(depthOf.size);
        for (const [i, span] of detail.spans.entries()) {
          expect(span.depth).toBe(depthOf.get(span.id));
          if (i > 0)
            expect(detail.spans.slice(0, i).some((p) => p.id === span.parentId)).toBe(true);
        }
        expect(detail.openSpanCount).toBe(open.length);
      }),
      { numRuns: 60 },
    );
  });
});
