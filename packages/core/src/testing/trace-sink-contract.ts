import { afterEach, describe, expect, it } from "vitest";
import type { ContextEvent } from "../context/events.js";
import { ExecContext } from "../context/exec-context.js";
import type { Span } from "../context/span.js";
import type { SpanStatus } from "../types/trace.js";
import { traceSinkErrors, type TraceSink } from "../tracing/sink.js";
import type { UserUsage } from "../tracing/usage-meter.js";
import {
  ODD_NAME,
  runScenario,
  scenarioSpans,
  type ScenarioRequest,
} from "./trace-sink-scenario.js";

/** One span as a sink reports it to the contract (normalised from whatever it keeps or wrote). */
export interface TraceSinkContractSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentId: string | null;
  /** Nerva's span name (a sink that renames spans, e.g. for OpenTelemetry, maps them back). */
  readonly name: string;
  readonly status: SpanStatus;
  /** The span's own usage, for sinks that keep it. */
  readonly usage?: {
    readonly inputTokens: number;
    readonly outputTokens: number;
    readonly costUsd: number;
  };
}

/** One event as a sink reports it to the contract. */
export interface TraceSinkContractEvent {
  readonly traceId: string;
  readonly spanId: string | null;
  readonly name: string;
}

/**
 * What a sink kept or wrote, normalised. Report what the sink promises to keep: spans (a store,
 * a log, an exporter), events, per-user usage (a meter), or several; at least one of them.
 */
export interface TraceSinkContractRecord {
  readonly spans?: readonly TraceSinkContractSpan[];
  readonly events?: readonly TraceSinkContractEvent[];
  readonly users?: readonly UserUsage[];
}

/** A fresh sink for one test, and how to read what it kept. */
export interface TraceSinkContractSetup {
  readonly sink: TraceSink;
  /** Called after `sink.forceFlush()` (when the sink has one). */
  read(): TraceSinkContractRecord | Promise<TraceSinkContractRecord>;
  /** Releases what the setup made (servers, files), after the test. */
  close?(): void | Promise<void>;
}

/**
 * The limits the factory's sinks were built with, for the suite to check they hold. Each must
 * leave room for one request of the scenario (about 30 spans): use at least 100 spans, 5 traces
 * or 5 users, and at most 1,000 of each (the suite sends three times the limit).
 */
export interface TraceSinkContractLimits {
  /** Most spans `read()` may report. */
  readonly maxSpans?: number;
  /** Most distinct traces among the spans `read()` reports. */
  readonly maxTraces?: number;
  /** Most users `read()` may report. */
  readonly maxUsers?: number;
}

/** Builds a fresh sink (called once per test). */
export type TraceSinkContractFactory = () =>
  TraceSinkContractSetup | Promise<TraceSinkContractSetup>;

/** A span as the contract compares it (a helper for sinks that keep `Span` objects). */
export function contractSpanOf(span: Span): TraceSinkContractSpan {
  const u = span.usage;
  return {
    traceId: span.traceId,
    spanId: span.id,
    parentId: span.parentId,
    name: span.name,
    status: span.status,
    usage: { inputTokens: u.promptTokens, outputTokens: u.completionTokens, costUsd: u.costUsd },
  };
}

/** An event as the contract compares it. */
export function contractEventOf(event: ContextEvent): TraceSinkContractEvent {
  return { traceId: event.traceId, spanId: event.spanId, name: event.name };
}

const byId = (spans: readonly TraceSinkContractSpan[]): Map<string, TraceSinkContractSpan> =>
  new Map(spans.map((s) => [s.spanId, s]));

function checkSpans(kept: readonly TraceSinkContractSpan[], spans: readonly Span[]): void {
  expect(byId(kept).size, "no span is reported twice").toBe(kept.length);
  expect(new Set(kept.map((s) => s.spanId))).toEqual(new Set(spans.map((s) => s.id)));
  const found = byId(kept);
  for (const span of spans) {
    const got = found.get(span.id)!;
    const want = contractSpanOf(span);
    expect({ ...got, usage: undefined }, span.name).toEqual({ ...want, usage: undefined });
    if (got.usage === undefined) continue;
    expect(got.usage.inputTokens, `${span.name} input tokens`).toBe(want.usage!.inputTokens);
    expect(got.usage.outputTokens, `${span.name} output tokens`).toBe(want.usage!.outputTokens);
    expect(got.usage.costUsd, `${span.name} cost`).toBeCloseTo(want.usage!.costUsd, 9);
  }
}

function checkUsers(users: readonly UserUsage[], requests: readonly ScenarioRequest[]): void {
  const want = new Map<string | null, UserUsage>();
  for (const { userId, ctx } of requests) {
    const u = ctx.tokenUsage;
    const e = want.get(userId);
    want.set(userId, {
      userId,
      requests: (e?.requests ?? 0) + 1,
      inputTokens: (e?.inputTokens ?? 0) + u.promptTokens,
      outputTokens: (e?.outputTokens ?? 0) + u.completionTokens,
      costUsd: (e?.costUsd ?? 0) + u.costUsd,
    });
  }
  expect(users.map((u) => u.userId).sort()).toEqual([...want.keys()].sort());
  for (const got of users) {
    const e = want.get(got.userId)!;
    expect({ ...got, costUsd: 0 }, String(got.userId)).toEqual({ ...e, costUsd: 0 });
    expect(got.costUsd, `${String(got.userId)} cost`).toBeCloseTo(e.costUsd, 9);
  }
}

/**
 * What every {@link TraceSink} must do: take a realistic request tree (an orchestrator request
 * with tool calls, a failing tool, a model call with usage, a delegation, events, names with
 * quotes, newlines and emoji, a span that ends long after its children; a failing request; an
 * anonymous one; a run continued from another process), concurrently, without throwing; report
 * what it keeps with the right ids, parents, names, status and usage; resolve `forceFlush` and
 * `shutdown`, more than once; take calls after `shutdown` without throwing; and, with `limits`,
 * stay within them.
 *
 * `factory` is called once per test and returns `{ sink, read, close? }`: `read()` reports what
 * the sink kept or wrote in the normalised form of {@link TraceSinkContractRecord}.
 *
 * @example
 * describeTraceSinkContract("MemoryTraceSink", () => {
 *   const sink = new MemoryTraceSink({ maxSpans: 200 });
 *   return { sink, read: () => ({ spans: sink.spans.map(contractSpanOf) }) };
 * }, { maxSpans: 200 });
 */
export function describeTraceSinkContract(
  label: string,
  factory: TraceSinkContractFactory,
  limits: TraceSinkContractLimits = {},
): void {
  describe(`trace sink contract: ${label}`, () => {
    const open: TraceSinkContractSetup[] = [];
    afterEach(async () => {
      for (const s of open.splice(0)) await s.close?.();
    });
    const make = async (): Promise<TraceSinkContractSetup> => {
      const setup = await factory();
      open.push(setup);
      return setup;
    };
    const readAll = async (setup: TraceSinkContractSetup): Promise<TraceSinkContractRecord> => {
      await setup.sink.forceFlush?.();
      const record = await setup.read();
      const reported = [record.spans, record.events, record.users].filter((x) => x !== undefined);
      expect(reported.length, "read() must report spans, events or users").toBeGreaterThan(0);
      return record;
    };

    it("records a realistic request tree with its ids, parents, names, status and usage", async () => {
      const setup = await make();
      const requests = await runScenario(setup.sink);
      expect(traceSinkErrors(setup.sink), "the sink threw while requests ran").toBe(0);
      const spans = scenarioSpans(requests);
      expect(spans.map((s) => s.name)).toContain(ODD_NAME); // the scenario ran as written
      expect(spans.every((s) => s.ended)).toBe(true);
      const record = await readAll(setup);
      if (record.spans !== undefined) checkSpans(record.spans, spans);
      if (record.users !== undefined) checkUsers(record.users, requests);
      if (record.events !== undefined) {
        const key = (e: TraceSinkContractEvent): string =>
          JSON.stringify([e.traceId, e.spanId, e.name]);
        const events = requests.flatMap((r) => r.ctx.events.map(contractEventOf));
        expect(record.events.map(key).sort()).toEqual(events.map(key).sort());
      }
    });

    it("keeps every span under its own parent, and every user apart, when requests interleave", async () => {
      const setup = await make();
      const runs = await Promise.all(Array.from({ length: 5 }, () => runScenario(setup.sink)));
      const record = await readAll(setup);
      if (record.users !== undefined) checkUsers(record.users, runs.flat());
      if (record.spans === undefined) return;
      const found = byId(record.spans);
      const bounded = limits.maxSpans !== undefined || limits.maxTraces !== undefined;
      for (const span of runs.flatMap(scenarioSpans)) {
        const got = found.get(span.id);
        if (!bounded) expect(got, `span ${span.name} kept`).toBeDefined();
        if (got === undefined) continue;
        expect(got.traceId).toBe(span.traceId);
        expect(got.parentId).toBe(span.parentId);
        const parent = got.parentId === null ? undefined : found.get(got.parentId);
        if (parent !== undefined) expect(parent.traceId).toBe(got.traceId);
      }
    });

    it("resolves forceFlush and shutdown more than once; later calls do not throw", async () => {
      const setup = await make();
      const { sink } = setup;
      await runScenario(sink);
      await Promise.all([sink.forceFlush?.(), sink.forceFlush?.()]);
      await Promise.all([sink.shutdown?.(), sink.shutdown?.()]);
      await sink.shutdown?.();
      await sink.forceFlush?.();
      // After shutdown: direct calls, and a whole request, must neither throw nor fail.
      const loose = ExecContext.create({ userId: "late" });
      const span = loose.startSpan("late.direct");
      const event = loose.fork({ span }).event("late.event");
      span.end();
      expect(() => {
        sink.onSpanStart?.(span);
        sink.onSpanEnd(span);
        sink.onEvent?.(event);
      }).not.toThrow();
      if (sink.runInSpan !== undefined) {
        expect(sink.runInSpan(span, () => 42)).toBe(42);
        expect(() =>
          sink.runInSpan!(span, () => {
            throw new Error("the work's own error");
          }),
        ).toThrow("the work's own error");
      }
      const results = await runScenario(sink);
      expect(results).toHaveLength(4);
      expect(traceSinkErrors(sink)).toBe(0);
      await readAll(setup);
    });

    if (limits.maxSpans !== undefined || limits.maxTraces !== undefined) {
      it("keeps no more spans or traces than its limits, and the newest ones", async () => {
        const setup = await make();
        for (const max of [limits.maxSpans, limits.maxTraces]) {
          expect(max ?? 0, "contract limits must be at most 1,000").toBeLessThanOrEqual(1_000);
        }
        // Three spans a request: three times either limit.
        const requests = Math.max(limits.maxSpans ?? 0, (limits.maxTraces ?? 0) * 3);
        let last: ExecContext | null = null;
        for (let i = 0; i < requests; i++) {
          const ctx = ExecContext.create({ userId: "bulk", traceSink: setup.sink });
          await ctx.span("handle", async (inner) => {
            await inner.span("runtime.invoke", () => inner.event("tick"));
            inner.startSpan("tools.call").end();
          });
          last = ctx;
        }
        const { spans = [] } = await readAll(setup);
        if (limits.maxSpans !== undefined)
          expect(spans.length).toBeLessThanOrEqual(limits.maxSpans);
        if (limits.maxTraces !== undefined) {
          expect(new Set(spans.map((s) => s.traceId)).size).toBeLessThanOrEqual(limits.maxTraces);
        }
        const newest = last!.spans.find((s) => s.name === "handle")!;
        expect(
          spans.some((s) => s.spanId === newest.id),
          "the newest request is kept",
        ).toBe(true);
      });
    }

    if (limits.maxUsers !== undefined) {
      it("keeps no more users than its limit, and the most recent one", async () => {
        const setup = await make();
        const max = limits.maxUsers!;
        expect(max, "contract limits must be at most 1,000").toBeLessThanOrEqual(1_000);
        for (let i = 0; i < max * 3; i++) {
          const ctx = ExecContext.create({ userId: `user-${i}`, traceSink: setup.sink });
          await ctx.span("handle", (inner) => inner.recordTokens({ promptTokens: 1 }));
        }
        const { users = [] } = await readAll(setup);
        expect(users.length).toBeLessThanOrEqual(max);
        expect(users.some((u) => u.userId === `user-${max * 3 - 1}`)).toBe(true);
      });
    }
  });
}
