import { AsyncLocalStorage } from "node:async_hooks";
import { describe, expect, it, vi } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import type { Span } from "../context/span.js";
import { isNervaError } from "../errors.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { z } from "zod";
import { FunctionToolManager, defineTool } from "../tools/function-tool-manager.js";
import { Orchestrator } from "../orchestrator/orchestrator.js";
import { RuleRouter } from "../router/rule-router.js";
import { MemoryTraceSink } from "./memory-sink.js";
import { combineSinks, traceSinkErrors, type TraceSink } from "./sink.js";

describe("trace sinks", () => {
  it("is told of each span once at start and once at end, after its end time and status", async () => {
    const seen: string[] = [];
    const sink: TraceSink = {
      onSpanStart: (span) => seen.push(`start ${span.name} ended=${String(span.ended)}`),
      onSpanEnd: (span) =>
        seen.push(`end ${span.name} ${span.status} ${String(span.endMs !== null)}`),
    };
    const ctx = ExecContext.create({ traceSink: sink });
    await ctx.span("outer", async (inner) => {
      const s = inner.startSpan("inner");
      s.end("error", "boom");
      s.end("ok"); // ignored: a span ends once
    });
    expect(seen).toEqual([
      "start outer ended=false",
      "start inner ended=false",
      "end inner error true",
      "end outer ok true",
    ]);
  });

  it("is inherited by child() and fork(), and reports events", () => {
    const sink = new MemoryTraceSink();
    const ctx = ExecContext.create({ traceSink: sink });
    const child = ctx.child("calendar_agent");
    const fork = child.fork({ agentName: "x" });
    fork.startSpan("in.fork").end();
    child.event("picked", { slot: 3 });
    expect(child.traceSink).toBe(sink);
    expect(sink.spans.map((s) => s.name)).toEqual(["in.fork"]);
    expect(sink.events.map((e) => [e.name, e.requestId])).toEqual([["picked", child.requestId]]);
    expect(sink.started).toBe(1);
  });

  it("never fails a request: a throwing sink is reported once to onError, then counted", async () => {
    const onError = vi.fn();
    const sink: TraceSink = {
      onSpanStart: () => {
        throw new Error("start broke");
      },
      onSpanEnd: () => {
        throw new Error("end broke");
      },
      onEvent: () => {
        throw new Error("event broke");
      },
      runInSpan: () => {
        throw new Error("run broke");
      },
      onError,
    };
    const runtime = new InProcessRuntime();
    runtime.register("echo", (input, ctx) => {
      ctx.event("inside");
      return `echo ${input.message}`;
    });
    const ctx = ExecContext.create({ traceSink: sink });
    const result = await runtime.invoke("echo", { message: "hi" }, ctx);
    expect(result.status).toBe("success");
    expect(result.output).toBe("echo hi");
    expect(onError).toHaveBeenCalledTimes(1);
    expect((onError.mock.calls[0]![0] as Error).message).toBe("start broke");
    expect(traceSinkErrors(sink)).toBe(4); // start, runInSpan, event, end
  });

  it("without onError, warns once through process warnings", async () => {
    const warnings: string[] = [];
    const listen = (w: Error): void => void warnings.push(w.message);
    process.on("warning", listen);
    try {
      const sink: TraceSink = {
        onSpanEnd: () => {
          throw new Error("no disk");
        },
      };
      const ctx = ExecContext.create({ traceSink: sink });
      for (let i = 0; i < 5; i++) ctx.startSpan("s").end();
      await new Promise((r) => setImmediate(r));
      expect(warnings.filter((w) => w.includes("no disk"))).toHaveLength(1);
      expect(traceSinkErrors(sink)).toBe(5);
    } finally {
      process.off("warning", listen);
    }
  });

  it("rejects what is not a sink, naming the option", () => {
    for (const bad of [{}, { onSpanEnd: 1 }, "sink", 42]) {
      try {
        ExecContext.create({ traceSink: bad as unknown as TraceSink });
        expect.unreachable();
      } catch (err) {
        expect(isNervaError(err) && err.code).toBe("INVALID_OPTIONS");
        expect((err as Error).message).toContain("traceSink");
      }
    }
  });

  it("runs handlers and tools inside runInSpan, across awaits", async () => {
    const current = new AsyncLocalStorage<Span>();
    const sink: TraceSink = {
      onSpanEnd: () => {},
      runInSpan: (span, fn) => current.run(span, fn),
    };
    let inTool: string | undefined;
    const tools = new FunctionToolManager().register(
      defineTool({
        name: "lookup",
        description: "Looks up",
        parameters: z.object({}),
        run: async () => {
          await new Promise((r) => setTimeout(r, 1));
          inTool = current.getStore()?.name;
          return "found";
        },
      }),
    );
    const runtime = new InProcessRuntime();
    let inHandler: string | undefined;
    const orchestrator = new Orchestrator({
      router: new RuleRouter({ rules: [{ handler: "agent", pattern: ".*" }] }),
      runtime,
      tools,
    });
    runtime.register("agent", async (_input, ctx) => {
      await new Promise((r) => setTimeout(r, 1));
      inHandler = current.getStore()?.name;
      const found = await orchestrator.kit(ctx).tools.call("lookup", {});
      return String(found.output);
    });
    const ctx = ExecContext.create({ traceSink: sink });
    const result = await orchestrator.handle("hello", ctx);
    expect(result.text).toBe("found");
    expect(inHandler).toBe("runtime.invoke");
    expect(inTool).toBe("tools.call");
    expect(current.getStore()).toBeUndefined();
  });

  it("combineSinks tells every sink even when one throws, and nests runInSpan", () => {
    const a = new MemoryTraceSink();
    const b = new MemoryTraceSink();
    const order: string[] = [];
    const broken: TraceSink = {
      onSpanEnd: () => {
        throw new Error("broken");
      },
      runInSpan: (_s, fn) => {
        order.push("broken");
        return fn();
      },
      onError: (err) => reported.push(err),
    };
    const reported: unknown[] = [];
    const tracer: TraceSink = {
      onSpanEnd: () => {},
      runInSpan: (_s, fn) => {
        order.push("tracer");
        return fn();
      },
    };
    const combined = combineSinks(a, broken, tracer, b);
    const ctx = ExecContext.create({ traceSink: combined });
    const span = ctx.startSpan("one");
    expect(ctx.runInSpan(span, () => 7)).toBe(7);
    span.end();
    expect(order).toEqual(["broken", "tracer"]);
    expect(a.spans).toHaveLength(1);
    expect(b.spans).toHaveLength(1);
    // The broken sink's error went to its own onError and is counted on it, not on the others.
    span.end(); // a second end is ignored: no second call
    ctx.startSpan("two").end();
    expect(reported).toHaveLength(1);
    expect((reported[0] as Error).message).toBe("broken");
    expect(traceSinkErrors(broken)).toBe(2);
    expect(traceSinkErrors(combined)).toBe(0);
    expect(a.spans).toHaveLength(2);
  });

  it("combineSinks waits for every flush and rejects when one fails", async () => {
    let flushed = 0;
    const ok: TraceSink = { onSpanEnd: () => {}, forceFlush: async () => void flushed++ };
    const failing: TraceSink = {
      onSpanEnd: () => {},
      forceFlush: () => Promise.reject(new Error("exporter down")),
    };
    await expect(combineSinks(ok, failing, ok).forceFlush!()).rejects.toThrow("exporter down");
    expect(flushed).toBe(2);
    await expect(combineSinks(ok).shutdown!()).resolves.toBeUndefined();
  });

  it("MemoryTraceSink is bounded and counts what it dropped", () => {
    const sink = new MemoryTraceSink({ maxSpans: 3 });
    const ctx = ExecContext.create({ traceSink: sink });
    for (let i = 0; i < 5; i++) ctx.startSpan(`s${i}`).end();
    expect(sink.spans.map((s) => s.name)).toEqual(["s2", "s3", "s4"]);
    expect(sink.droppedSpans).toBe(2);
    // Well past the bound (across the cut back to the newest): still the newest three, in order.
    for (let i = 5; i < 50; i++) ctx.startSpan(`s${i}`).end();
    expect(sink.spans.map((s) => s.name)).toEqual(["s47", "s48", "s49"]);
    expect(sink.trace(ctx.traceId)).toHaveLength(3);
    expect(sink.droppedSpans).toBe(47);
    expect(() => new MemoryTraceSink({ maxSpans: 0 })).toThrow(/options.maxSpans/);
  });

  it("marks a handler run in another process as a client span", async () => {
    const sink = new MemoryTraceSink();
    const runtime = new InProcessRuntime();
    runtime.register("a", () => "ok");
    await runtime.invoke("a", { message: "" }, ExecContext.create({ traceSink: sink }));
    expect(sink.spans[0]!.kind).toBe("internal");
    expect(sink.spans[0]!.isLocalRoot).toBe(true);
  });
});
