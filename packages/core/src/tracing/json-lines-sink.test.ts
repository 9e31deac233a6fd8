import { execFile } from "node:child_process";
import { dirname, join } from "node:path";
import { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { ExecContext } from "../context/exec-context.js";
import { isNervaError } from "../errors.js";
import { Orchestrator } from "../orchestrator/orchestrator.js";
import { RuleRouter } from "../router/rule-router.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { FunctionToolManager, defineTool } from "../tools/function-tool-manager.js";
import { JsonLinesTraceSink } from "./json-lines-sink.js";
import { logFields } from "./log-fields.js";
import { traceSinkErrors } from "./sink.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "../../../..");
const tick = (): Promise<void> => new Promise((r) => setImmediate(r));
type Line = Record<string, unknown>;

function capture(): { sink: JsonLinesTraceSink; lines: string[]; parsed: () => Line[] } {
  const lines: string[] = [];
  const sink = new JsonLinesTraceSink({ write: (line) => void lines.push(line) });
  return { sink, lines, parsed: () => lines.map((l) => JSON.parse(l) as Line) };
}

describe("JsonLinesTraceSink", () => {
  it("writes one line per ended span and per event, children before parents", async () => {
    const { sink, parsed } = capture();
    const tools = new FunctionToolManager().register(
      defineTool({
        name: "lookup",
        description: "Looks up",
        parameters: z.object({}),
        run: () => {
          throw new Error("index offline");
        },
      }),
    );
    const runtime = new InProcessRuntime();
    const orchestrator = new Orchestrator({
      router: new RuleRouter({ rules: [], defaultHandler: "agent" }),
      runtime,
      tools,
    });
    runtime.register(
      "agent",
      orchestrator.handler(async (_input, ctx, kit) => {
        ctx.recordTokens({ promptTokens: 12, completionTokens: 3, costUsd: 0.002, model: "m" });
        ctx.event("thinking", { step: 1, "naïve ✓": "ok" });
        await kit.tools.call("lookup", {});
        return "done";
      }),
    );
    const ctx = ExecContext.create({ userId: "u1", traceSink: sink });
    await orchestrator.handle("hi", ctx);
    await sink.forceFlush();

    const lines = parsed();
    const spans = lines.filter((l) => l["kind"] === "span");
    const byName = (n: string): Line => spans.find((l) => l["name"] === n)!;
    expect(spans.map((l) => l["name"])).toEqual(
      ctx.spans
        .filter((s) => s.ended)
        .sort((a, b) => a.endMs! - b.endMs!)
        .map((s) => s.name),
    );
    expect(spans.at(-1)!["name"]).toBe("handle");
    const invoke = ctx.spans.find((s) => s.name === "runtime.invoke")!;
    expect(byName("runtime.invoke")).toEqual({
      ts: new Date(invoke.startMs).toISOString(),
      kind: "span",
      trace_id: ctx.traceId,
      span_id: invoke.id,
      parent_id: invoke.parentId,
      request_id: ctx.requestId,
      name: "runtime.invoke",
      duration_ms: expect.any(Number) as number,
      status: "ok",
      error: null,
      attrs: { ...invoke.attributes },
      usage: {
        prompt_tokens: 12,
        completion_tokens: 3,
        total_tokens: 15,
        cost_usd: 0.002,
        cached_input_tokens: 0,
        reasoning_tokens: 0,
      },
      total_usage: expect.objectContaining({ total_tokens: 15 }) as unknown,
    });
    expect(byName("handle")).toMatchObject({ usage: null, total_usage: { total_tokens: 15 } });
    expect(byName("runtime.invoke")["attrs"]).toMatchObject({ model: "m" });
    expect(byName("tools.call")).toMatchObject({
      status: "error",
      error: 'Tool "lookup" failed: index offline',
    });
    expect(lines.find((l) => l["kind"] === "event" && l["name"] === "thinking")).toEqual({
      ts: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) as string,
      kind: "event",
      trace_id: ctx.traceId,
      span_id: invoke.id,
      request_id: ctx.requestId,
      name: "thinking",
      attrs: { step: 1, "naïve ✓": "ok" },
    });
  });

  it("keeps one record per line whatever the names hold, and does no work on the request path", async () => {
    const { sink, lines, parsed } = capture();
    const ctx = ExecContext.create({ traceSink: sink });
    const odd = 'multi\nline "quoted" \u2028 ✈️ 検索 \ud800';
    ctx.startSpan(odd, { [odd]: odd }).end();
    ctx.event(odd, { x: odd });
    expect(lines).toHaveLength(0); // queued, not serialised yet
    await tick();
    expect(lines).toHaveLength(2);
    for (const line of lines) expect(line).not.toContain("\n");
    expect(parsed()[0]!["name"]).toBe(odd);
    expect(parsed()[1]!["attrs"]).toEqual({ x: odd });
  });

  it("bounds the backlog behind a stuck writer, drops with a count, and catches up", async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => (release = r));
    const written: string[] = [];
    const sink = new JsonLinesTraceSink({
      maxBacklog: 100,
      write: (line) => {
        written.push(line);
        return gate; // every write waits until the writer comes back
      },
    });
    const ctx = ExecContext.create({ traceSink: sink });
    for (let i = 0; i < 20_000; i++) ctx.startSpan(`s${i}`).end();
    await tick();
    // The 100 queued lines are now the batch in the writer; they still count against the backlog.
    for (let i = 0; i < 20_000; i++) ctx.startSpan(`t${i}`).end();
    expect(written).toHaveLength(1); // the first line is stuck in the writer
    expect(sink.droppedLines).toBe(40_000 - 100);
    let flushed = false;
    const flush = sink.forceFlush().then(() => (flushed = true));
    await tick();
    expect(flushed).toBe(false);
    release();
    await flush;
    expect(written.map((l) => (JSON.parse(l) as Line)["name"])).toEqual(
      Array.from({ length: 100 }, (_, i) => `s${i}`),
    );
    // Caught up: new lines are written again.
    ctx.startSpan("later").end();
    await sink.forceFlush();
    expect(written.at(-1)).toContain('"later"');
    expect(sink.writtenLines).toBe(101);
  });

  it("a writer that throws or rejects loses only that line, reported once", async () => {
    const onError = vi.fn();
    const written: string[] = [];
    let n = 0;
    const sink = new JsonLinesTraceSink({
      onError,
      write: (line) => {
        n++;
        if (n % 3 === 1) throw new Error("disk full");
        if (n % 3 === 2) return Promise.reject(new Error("socket closed"));
        written.push(line);
      },
    });
    const ctx = ExecContext.create({ traceSink: sink });
    for (let i = 0; i < 9; i++) ctx.startSpan(`s${i}`).end();
    await sink.forceFlush();
    expect(written.map((l) => (JSON.parse(l) as Line)["name"])).toEqual(["s2", "s5", "s8"]);
    expect(sink.writeErrors).toBe(6);
    expect(sink.droppedLines).toBe(6);
    expect(sink.writtenLines).toBe(3);
    expect(onError).toHaveBeenCalledTimes(1);
    expect((onError.mock.calls[0]![0] as Error).message).toBe("disk full");
    expect(traceSinkErrors(sink)).toBe(0); // the request path never saw an error
  });

  it("honours a stream's backpressure: lines arrive in order and its buffer stays bounded", async () => {
    const received: string[] = [];
    let most = 0;
    // A reader that takes nothing until the spans are all made, then catches up.
    let held: (() => void) | null = null;
    let paused = true;
    const stream = new Writable({
      highWaterMark: 1024,
      write(chunk: Buffer, _enc, done) {
        received.push(chunk.toString());
        most = Math.max(most, this.writableLength);
        if (paused) held = done;
        else setImmediate(done);
      },
    });
    const sink = new JsonLinesTraceSink({ stream, maxBacklog: 250 });
    const ctx = ExecContext.create({ traceSink: sink });
    for (let round = 0; round < 20; round++) {
      for (let i = 0; i < 100; i++) ctx.startSpan(`s${round * 100 + i}`).end();
      await tick();
    }
    paused = false;
    held!();
    await sink.forceFlush();
    const lines = received
      .join("")
      .split("\n")
      .filter((l) => l !== "");
    const order = lines.map((l) => Number(String((JSON.parse(l) as Line)["name"]).slice(1)));
    expect(order).toEqual([...order].sort((a, b) => a - b));
    expect(order[0]).toBe(0);
    expect(lines).toHaveLength(sink.writtenLines);
    expect(sink.writtenLines + sink.droppedLines).toBe(2000);
    expect(sink.droppedLines).toBe(2000 - 250); // one batch in the stream, a backlog's worth queued
    // Never more than a backlog's worth of lines in the stream's buffer.
    const longest = Math.max(...lines.map((l) => l.length + 1));
    expect(most).toBeLessThanOrEqual(250 * longest);
  });

  it("writes to process.stdout by default (a real child process)", async () => {
    const script = `
      import { ExecContext } from "@nerva/core";
      import { JsonLinesTraceSink } from "@nerva/core/tracing";
      const sink = new JsonLinesTraceSink();
      const ctx = ExecContext.create({ traceSink: sink });
      for (let i = 0; i < 3000; i++) ctx.startSpan("s" + i).end();
      ctx.event("done");
      await sink.shutdown();
      ctx.startSpan("late").end();
      console.error(JSON.stringify({ dropped: sink.droppedLines }));
    `;
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ["--input-type=module", "-e", script],
      { cwd: root, maxBuffer: 64 * 1024 * 1024 },
    );
    const lines = stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(3001);
    expect((JSON.parse(lines[2999]!) as Line)["name"]).toBe("s2999");
    expect(JSON.parse(lines[3000]!)).toMatchObject({ kind: "event", name: "done" });
    expect(JSON.parse(stderr.trim())).toEqual({ dropped: 1 });
  });

  it("shutdown and forceFlush are idempotent; later spans are dropped and counted, never thrown", async () => {
    const { sink, lines } = capture();
    const ctx = ExecContext.create({ traceSink: sink });
    ctx.startSpan("before").end();
    await Promise.all([sink.shutdown(), sink.shutdown(), sink.forceFlush()]);
    await sink.shutdown();
    expect(lines).toHaveLength(1);
    ctx.startSpan("after").end();
    ctx.event("after");
    await sink.forceFlush();
    expect(lines).toHaveLength(1);
    expect(sink.droppedLines).toBe(2);
  });

  it("rejects bad options with INVALID_OPTIONS naming the field", () => {
    const cases: [unknown, RegExp][] = [
      [{ write: "stdout" }, /options\.write/],
      [{ maxBacklog: 0 }, /options\.maxBacklog/],
      [{ stream: {} }, /options\.stream/],
      [{ write: () => {}, stream: process.stdout }, /write or stream/],
      [{ flush: true }, /flush/],
    ];
    for (const [bad, message] of cases) {
      try {
        new JsonLinesTraceSink(bad as never);
        expect.unreachable();
      } catch (err) {
        expect(isNervaError(err) && err.code).toBe("INVALID_OPTIONS");
        expect((err as Error).message).toMatch(message);
      }
    }
  });
});

describe("logFields", () => {
  it("ties the app's own log lines to the span that was current", async () => {
    const { sink, parsed } = capture();
    // A hand-made logger with bound fields, the way pino's logger.child(bindings) works.
    const records: Line[] = [];
    const logger = {
      bindings: {} as Line,
      child(bindings: object) {
        return { ...logger, bindings: { ...this.bindings, ...bindings } };
      },
      info(msg: string) {
        records.push({ ...this.bindings, msg });
      },
    };
    const ctx = ExecContext.create({ traceSink: sink });
    expect(logFields(ctx)).toEqual({
      trace_id: ctx.traceId,
      span_id: null,
      request_id: ctx.requestId,
    });
    await ctx.span("charge", (inner) => logger.child(logFields(inner)).info("charging card"));
    await sink.forceFlush();
    const span = parsed()[0]!;
    expect(records).toEqual([
      {
        trace_id: span["trace_id"],
        span_id: span["span_id"],
        request_id: span["request_id"],
        msg: "charging card",
      },
    ]);
  });
});
