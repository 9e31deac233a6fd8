import { describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import { Orchestrator } from "../orchestrator/orchestrator.js";
import { RuleRouter } from "../router/rule-router.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { JsonLinesTraceSink } from "../tracing/json-lines-sink.js";
import { agentResult, createAgentInput } from "../types/agent.js";
import { InputSizeLimitMiddleware } from "./input-size-limit.js";
import { LoggingMiddleware } from "./logging.js";
import { MetricsMiddleware } from "./metrics.js";
import { MiddlewarePipeline } from "./pipeline.js";
import type { Middleware, OrchestratorResponse } from "./types.js";

const ctxOf = () => ExecContext.create({ userId: "u1", sessionId: "s1" });

describe("MiddlewarePipeline", () => {
  it("passes each payload through the hooks in registration order", async () => {
    const calls: string[] = [];
    class Upper implements Middleware {
      beforeRoute(message: string) {
        calls.push("upper");
        return message.toUpperCase();
      }
    }
    const exclaim: Middleware = {
      name: "exclaim",
      beforeRoute: async (m) => {
        calls.push("exclaim");
        return `${m}!`;
      },
    };
    const pipeline = new MiddlewarePipeline([new Upper(), exclaim, { name: "no hooks" }]);
    const ctx = ctxOf();
    expect(await pipeline.run("before_route", "hi", ctx)).toBe("HI!");
    expect(calls).toEqual(["upper", "exclaim"]);
    expect(pipeline.has("before_route")).toBe(true);
    expect(pipeline.has("after_invoke")).toBe(false);
    expect(ctx.spans.map((s) => [s.name, s.status, s.attributes["count"]])).toEqual([
      ["middleware.before_route", "ok", 2],
    ]);
    const request = { handler: "a", input: createAgentInput({ message: "x" }) };
    expect(await pipeline.run("before_invoke", request, ctx)).toBe(request);
  });

  it("stops at a throwing hook: later hooks never see the payload", async () => {
    const seen: string[] = [];
    const pipeline = new MiddlewarePipeline([
      {
        name: "auth",
        beforeRoute: () => {
          throw new NervaError(ErrorCode.UNAUTHENTICATED, "no token");
        },
      },
      { name: "later", beforeRoute: (m) => (seen.push(m), m) },
    ]);
    const ctx = ctxOf();
    await expect(pipeline.run("before_route", "hi", ctx)).rejects.toMatchObject({
      code: ErrorCode.UNAUTHENTICATED,
    });
    expect(seen).toEqual([]);
    expect(ctx.events.map((e) => [e.name, e.attributes["middleware"]])).toEqual([
      ["middleware.error", "auth"],
    ]);
    expect(ctx.spans[0]?.status).toBe("error");
  });

  it("refuses a hook that returns nothing or the wrong shape instead of reusing the last payload", async () => {
    const forgot = new MiddlewarePipeline([
      { name: "forgot", afterInvoke: () => undefined as never },
    ]);
    await expect(forgot.run("after_invoke", agentResult("a", {}), ctxOf())).rejects.toThrow(
      /Middleware "forgot"\.afterInvoke must return a valid AgentResult \(got undefined\)/,
    );
    const wrong = new MiddlewarePipeline([
      { beforeInvoke: (r) => ({ ...r, input: { message: 42 } }) as never },
    ]);
    const request = { handler: "a", input: createAgentInput({ message: "x" }) };
    await expect(wrong.run("before_invoke", request, ctxOf())).rejects.toMatchObject({
      code: ErrorCode.INTERNAL,
    });
  });

  it("tells every onError hook, even when one of them throws", async () => {
    const seen: string[] = [];
    const pipeline = new MiddlewarePipeline([
      {
        name: "a",
        onError: (e, _c, stage) => void seen.push(`a:${stage}:${(e as Error).message}`),
      },
      {
        name: "b",
        onError: () => {
          throw new Error("logger down");
        },
      },
      { name: "c", onError: async (_e, _c, stage) => void seen.push(`c:${stage}`) },
    ]);
    const ctx = ctxOf();
    await pipeline.onError(new Error("boom"), ctx, "invoke");
    expect(seen).toEqual(["a:invoke:boom", "c:invoke"]);
    expect(ctx.events.map((e) => [e.name, e.attributes["middleware"]])).toEqual([
      ["middleware.error", "b"],
    ]);
  });

  it("validates registrations, naming the entry", () => {
    expect(() => new MiddlewarePipeline([null as never])).toThrow(/options\.middleware\[0\]/);
    expect(() => new MiddlewarePipeline([{ beforeRoute: "x" } as never])).toThrow(
      /options\.middleware\[0\]\.beforeRoute: must be a method/,
    );
    expect(() => new MiddlewarePipeline({} as never)).toThrow(/must be an array/);
  });
});

describe("built-in middleware", () => {
  const response: OrchestratorResponse = {
    text: "done",
    status: "success",
    handler: "a",
    data: {},
    error: null,
    truncated: false,
  };

  it("LoggingMiddleware writes one JSON line per stage with request identity", async () => {
    const lines: string[] = [];
    const logging = new LoggingMiddleware({ write: (l) => void lines.push(l) });
    const pipeline = new MiddlewarePipeline([logging]);
    const ctx = ctxOf();
    await pipeline.run("before_route", "secret message", ctx);
    await pipeline.run("after_route", { candidates: [], best: null }, ctx);
    await pipeline.run("after_invoke", agentResult("a", { status: "error", error: "x" }), ctx);
    await pipeline.run("before_respond", response, ctx);
    await pipeline.onError(
      new NervaError(ErrorCode.RATE_LIMITED, "slow", { details: { retryAfterSeconds: 1 } }),
      ctx,
      "route",
    );
    const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(records.map((r) => [r["event"], r["level"]])).toEqual([
      ["request.received", "info"],
      ["request.routed", "info"],
      ["handler.completed", "error"],
      ["request.responded", "info"],
      ["request.failed", "error"],
    ]);
    for (const r of records) {
      expect(r).toMatchObject({
        request_id: ctx.requestId,
        trace_id: ctx.traceId,
        span_id: null, // no span is open on this bare context
        user_id: "u1",
      });
    }
    expect(records[0]).toMatchObject({ message_length: 14 });
    expect(lines[0]).not.toContain("secret");
    expect(records[4]).toMatchObject({ code: "RATE_LIMITED", stage: "route" });
    const verbose: string[] = [];
    new LoggingMiddleware({ write: (l) => void verbose.push(l), includeMessage: true }).beforeRoute(
      "hello",
      ctx,
    );
    expect(JSON.parse(verbose[0]!)).toMatchObject({ message: "hello" });
  });

  it("LoggingMiddleware's span_id is the request's handle span, as in the JSON trace lines", async () => {
    const records: Record<string, unknown>[] = [];
    const traceLines: Record<string, unknown>[] = [];
    const runtime = new InProcessRuntime();
    runtime.register("a", () => "done");
    const orchestrator = new Orchestrator({
      router: new RuleRouter({ rules: [], defaultHandler: "a" }),
      runtime,
      middleware: [
        new LoggingMiddleware({ write: (l) => void records.push(JSON.parse(l) as never) }),
      ],
    });
    const sink = new JsonLinesTraceSink({
      write: (l) => void traceLines.push(JSON.parse(l) as never),
    });
    const ctx = ExecContext.create({ userId: "u1", traceSink: sink });
    await orchestrator.handle("hi", ctx);
    await sink.forceFlush();
    const handle = traceLines.find((l) => l["name"] === "handle")!;
    expect(records).toHaveLength(4);
    for (const r of records) {
      expect(r).toMatchObject({ span_id: handle["span_id"], trace_id: handle["trace_id"] });
    }
  });

  it("MetricsMiddleware counts requests, routes, invocations, responses and errors", async () => {
    const forwarded: string[] = [];
    const metrics = new MetricsMiddleware({
      onIncrement: (n, _l, v) => void forwarded.push(`${n}=${v}`),
    });
    const pipeline = new MiddlewarePipeline([metrics]);
    const ctx = ctxOf();
    await pipeline.run("before_route", "x", ctx);
    await pipeline.run("before_route", "y", ctx);
    await pipeline.run(
      "after_route",
      { candidates: [], best: { name: "a", score: 1, reason: "" } },
      ctx,
    );
    await pipeline.run("after_invoke", agentResult("a", {}), ctx);
    await pipeline.run("before_respond", response, ctx);
    await pipeline.onError(new NervaError(ErrorCode.BUDGET_EXCEEDED, "x"), ctx, "invoke");
    expect(metrics.snapshot()).toEqual({
      'errors_total{code="BUDGET_EXCEEDED",stage="invoke"}': 1,
      requests_total: 2,
      'invocations_total{handler="a",status="success"}': 1,
      'responses_total{status="success"}': 1,
      'routed_total{handler="a"}': 1,
    });
    expect(metrics.get("requests_total")).toBe(2);
    expect(forwarded).toContain("requests_total=2");
    metrics.reset();
    expect(metrics.snapshot()).toEqual({});
  });

  it("InputSizeLimitMiddleware refuses messages over the byte limit", () => {
    const limit = new InputSizeLimitMiddleware({ maxBytes: 10 });
    const ctx = ctxOf();
    expect(limit.beforeRoute("0123456789", ctx)).toBe("0123456789");
    // Four 3-byte characters: 4 code units but 12 bytes.
    expect(() => limit.beforeRoute("€€€€", ctx)).toThrow(/12 bytes, over the limit of 10/);
    let caught: unknown;
    try {
      limit.beforeRoute("x".repeat(11), ctx);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(NervaError);
    expect((caught as NervaError).code).toBe(ErrorCode.INVALID_INPUT);
    expect((caught as NervaError).details).toEqual({ bytes: 11, limit: 10 });
    expect(() => new InputSizeLimitMiddleware({ maxBytes: 0 })).toThrow(/options\.maxBytes/);
    expect(new InputSizeLimitMiddleware().maxBytes).toBe(32 * 1024);
  });
});
