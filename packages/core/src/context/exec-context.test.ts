import { getEventListeners } from "node:events";
import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import { ErrorCode, NervaError } from "../errors.js";
import { Permissions } from "../types/permissions.js";
import { MemoryTraceSink } from "../tracing/memory-sink.js";
import { ExecContext } from "./exec-context.js";
import { formatTraceparent, parseTraceparent } from "./ids.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("ExecContext.create", () => {
  it("fills identity and defaults", () => {
    const ctx = ExecContext.create({ userId: "u1", sessionId: "s1" });
    expect(ctx.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(ctx.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(ctx).toMatchObject({
      userId: "u1",
      sessionId: "s1",
      memoryScope: "session",
      depth: 0,
      agentName: null,
    });
    expect(ctx.permissions).toBe(Permissions.UNRESTRICTED);
    expect(ctx.timeoutAt).toBeNull();
    expect(Math.abs(ctx.createdAt - Date.now())).toBeLessThan(1000);
    expect(ctx.stream).toBeNull();
    expect(ExecContext.create().userId).toBeNull();
    expect(ExecContext.create().requestId).not.toBe(ctx.requestId);
  });

  it("accepts a supplied request id and trace id", () => {
    const ctx = ExecContext.create({
      requestId: "req-1",
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
    });
    expect(ctx.requestId).toBe("req-1");
    expect(ctx.traceId).toBe("4bf92f3577b34da6a3ce929d0e0e4736");
  });

  it("joins the caller's trace from a W3C traceparent and ignores a malformed one", () => {
    const ctx = ExecContext.create({
      traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    });
    expect(ctx.traceId).toBe("4bf92f3577b34da6a3ce929d0e0e4736");
    expect(ctx.currentSpanId).toBe("00f067aa0ba902b7");
    expect(ctx.startSpan("work").parentId).toBe("00f067aa0ba902b7");
    const bad = ExecContext.create({ traceparent: "00-zz-00f067aa0ba902b7-01" });
    expect(bad.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(bad.currentSpanId).toBeNull();
  });

  it.each([
    [{ memoryScope: "planet" }, "options.memoryScope"],
    [{ timeoutSeconds: -1 }, "options.timeoutSeconds"],
    [{ timeoutSeconds: Number.POSITIVE_INFINITY }, "options.timeoutSeconds"],
    [{ traceId: "XYZ" }, "options.traceId"],
    [{ traceId: "00000000000000000000000000000000" }, "options.traceId"],
    [{ userId: "" }, "options.userId"],
    [{ stream: {} }, "options.stream"],
    [{ colour: "blue" }, "options"],
  ])("rejects %j naming %s", (options, path) => {
    try {
      ExecContext.create(options as never);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(NervaError);
      expect((err as NervaError).code).toBe(ErrorCode.INVALID_OPTIONS);
      expect((err as NervaError).message).toContain(path);
    }
  });

  it("builds permissions from a plain object and validates them", () => {
    const ctx = ExecContext.create({ permissions: { roles: ["admin"], allowedTools: [] } });
    expect(ctx.permissions.hasRole("admin")).toBe(true);
    expect(ctx.permissions.canUseTool("anything")).toBe(false);
    expect(ctx.permissions.canUseAgent("anything")).toBe(true);
    expect(() => ExecContext.create({ permissions: { roles: "admin" } as never })).toThrow(
      /permissions\.roles/,
    );
  });
});

describe("Permissions", () => {
  it("treats null as unrestricted and [] as nothing", () => {
    const open = Permissions.create();
    const none = Permissions.create({ allowedTools: [], allowedAgents: [] });
    expect(open.canUseTool("x") && open.canUseAgent("y")).toBe(true);
    expect(none.canUseTool("x") || none.canUseAgent("y")).toBe(false);
    expect(Permissions.NONE.canUseAgent("y")).toBe(false);
  });

  it("is immutable; with() derives a new value", () => {
    const p = Permissions.create({ roles: ["a"], allowedTools: ["t"] });
    expect(Object.isFrozen(p)).toBe(true);
    expect(Object.isFrozen(p.roles)).toBe(true);
    expect(() => (p.roles as string[]).push("b")).toThrow();
    const q = p.with({ allowedTools: null });
    expect(q.canUseTool("other")).toBe(true);
    expect(p.canUseTool("other")).toBe(false);
    expect(q.hasRole("a")).toBe(true);
  });

  it("round-trips the snake_case wire form", () => {
    const p = Permissions.create({ roles: ["r"], allowedTools: ["t"], allowedAgents: null });
    expect(p.toWire()).toEqual({ roles: ["r"], allowed_tools: ["t"], allowed_agents: null });
    expect(Permissions.fromWire(p.toWire())).toEqual(p);
    expect(() => Permissions.fromWire({ roles: [], allowedTools: [] })).toThrow(/permissions/);
  });
});

describe("lifecycle", () => {
  it("times out: isTimedOut, signal aborted with a TIMEOUT NervaError", async () => {
    const ctx = ExecContext.create({ timeoutSeconds: 0.03 });
    expect(ctx.isTimedOut()).toBe(false);
    const signal = ctx.signal;
    await sleep(60);
    expect(ctx.isTimedOut()).toBe(true);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toMatchObject({ code: ErrorCode.TIMEOUT });
    expect(ctx.isCancelled()).toBe(false);
    expect(() => ctx.throwIfEnded()).toThrow(NervaError);
  });

  it("gives an already-aborted signal when read after the deadline", async () => {
    const ctx = ExecContext.create({ timeoutSeconds: 0.01 });
    await sleep(25);
    expect(ctx.signal.aborted).toBe(true);
    expect(ctx.endReason?.code).toBe(ErrorCode.TIMEOUT);
  });

  it("cancels with a reason; later cancels are ignored", () => {
    const ctx = ExecContext.create();
    ctx.cancel("user closed the tab");
    ctx.cancel("second");
    expect(ctx.isCancelled()).toBe(true);
    expect(ctx.signal.aborted).toBe(true);
    expect(ctx.signal.reason).toMatchObject({ code: ErrorCode.CANCELLED });
    expect((ctx.signal.reason as Error).message).toContain("user closed the tab");
  });

  it("propagates cancellation down to children and never up", () => {
    const parent = ExecContext.create();
    const child = parent.child("a");
    const grandchild = child.child("b");
    const sibling = parent.child("c");
    child.cancel();
    expect(grandchild.isCancelled()).toBe(true);
    expect(parent.isCancelled()).toBe(false);
    expect(sibling.isCancelled()).toBe(false);
    parent.cancel("stop");
    expect(sibling.isCancelled()).toBe(true);
    expect(sibling.signal.reason).toMatchObject({ code: ErrorCode.CANCELLED });
    expect(parent.child("late").isCancelled()).toBe(true);
  });

  it("cancelling a node cancels exactly its subtree (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.nat(), { minLength: 1, maxLength: 25 }),
        fc.nat(),
        (parents, pick) => {
          const nodes = [ExecContext.create()];
          const parentOf = [-1];
          for (const p of parents) {
            const idx = p % nodes.length;
            nodes.push((nodes[idx] as ExecContext).child(`n${nodes.length}`));
            parentOf.push(idx);
          }
          const target = pick % nodes.length;
          (nodes[target] as ExecContext).cancel();
          const inSubtree = (i: number): boolean =>
            i === target || (i > 0 && inSubtree(parentOf[i] as number));
          nodes.forEach((n, i) => expect(n.isCancelled()).toBe(inSubtree(i)));
        },
      ),
    );
  });

  it("leaves no timer behind once a context ends or is disposed", () => {
    vi.useFakeTimers();
    try {
      const contexts = Array.from({ length: 200 }, () =>
        ExecContext.create({ timeoutSeconds: 60 }),
      );
      expect(vi.getTimerCount()).toBe(0);
      for (const c of contexts) void c.signal;
      expect(vi.getTimerCount()).toBe(200);
      contexts.slice(0, 100).forEach((c) => c.dispose());
      contexts.slice(100).forEach((c) => c.cancel());
      expect(vi.getTimerCount()).toBe(0);
      const expiring = ExecContext.create({ timeoutSeconds: 1 });
      void expiring.signal;
      vi.advanceTimersByTime(1000);
      expect(expiring.signal.aborted).toBe(true);
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it("adds no abort listener to the parent's signal", () => {
    const parent = ExecContext.create({ timeoutSeconds: 60 });
    const parentSignal = parent.signal;
    const child = parent.child("x");
    void child.signal;
    expect(getEventListeners(parentSignal, "abort")).toHaveLength(0);
    parent.cancel();
    expect(child.signal.aborted).toBe(true);
  });

  it("dispose cancels descendants still running but leaves the context's own signal alone", () => {
    const parent = ExecContext.create();
    const child = parent.child("x");
    const signal = parent.signal;
    parent.dispose();
    expect(child.isCancelled()).toBe(true);
    expect(signal.aborted).toBe(false);
    expect(parent.isCancelled()).toBe(false);
  });
});

describe("child and fork", () => {
  it("child inherits trace, identity, permissions, scope and stream; new request id; depth + 1", () => {
    const stream = { push: () => undefined };
    const parent = ExecContext.create({
      userId: "u",
      sessionId: "s",
      permissions: { roles: ["r"] },
      memoryScope: "user",
      stream,
    });
    const child = parent.child("calendar_agent");
    expect(child).toMatchObject({
      traceId: parent.traceId,
      userId: "u",
      sessionId: "s",
      memoryScope: "user",
      depth: 1,
      agentName: "calendar_agent",
    });
    expect(child.permissions).toBe(parent.permissions);
    expect(child.stream).toBe(stream);
    expect(child.requestId).not.toBe(parent.requestId);
    expect(child.child("x").depth).toBe(2);
    expect(() => parent.child("")).toThrow(NervaError);
  });

  it("never gives a child a deadline later than its parent's", () => {
    const parent = ExecContext.create({ timeoutSeconds: 1 });
    expect(parent.child("a", { timeoutSeconds: 100 }).timeoutAt).toBe(parent.timeoutAt);
    expect(parent.child("b").timeoutAt).toBe(parent.timeoutAt);
    const shorter = parent.child("c", { timeoutSeconds: 0.1 });
    expect(shorter.timeoutAt).toBeLessThan(parent.timeoutAt as number);
    expect(ExecContext.create().child("d", { timeoutSeconds: 2 }).timeoutAt).not.toBeNull();
    expect(() => parent.child("e", { timeoutSeconds: -1 })).toThrow(/timeoutSeconds/);
  });

  it("a fork shares the request, and cancelling it leaves the base running", () => {
    const base = ExecContext.create();
    const fork = base.fork({ agentName: "worker", timeoutSeconds: 1 });
    expect(fork.requestId).toBe(base.requestId);
    expect(fork.agentName).toBe("worker");
    fork.cancel();
    expect(base.isCancelled()).toBe(false);
    expect(base.fork().isCancelled()).toBe(false);
  });

  it("reports the agent path for cycle checks", () => {
    const ctx = ExecContext.create()
      .fork({ agentName: "a" })
      .child("b")
      .fork({ agentName: "b" })
      .child("c");
    expect(ctx.agentPath()).toEqual(["c", "b", "a"]);
  });
});

describe("observability", () => {
  it("nests spans through ctx.span and records errors", async () => {
    const ctx = ExecContext.create();
    await ctx.span("outer", async (inner) => {
      inner.startSpan("leaf").end();
      await expect(inner.span("failing", () => Promise.reject(new Error("bad")))).rejects.toThrow(
        "bad",
      );
    });
    const [outer, leaf, failing] = ctx.spans;
    expect(outer?.name).toBe("outer");
    expect(leaf?.parentId).toBe(outer?.id);
    expect(failing).toMatchObject({ parentId: outer?.id, status: "error", error: "bad" });
    expect(outer?.status).toBe("ok");
    expect(outer?.durationMs).toBeGreaterThanOrEqual(0);
  });

  it("ends a span once and freezes its attributes after end", () => {
    const span = ExecContext.create().startSpan("s", { a: 1 });
    span.end("error", "first");
    span.end("ok");
    span.setAttribute("b", 2);
    expect(span.status).toBe("error");
    expect(span.attributes).toEqual({ a: 1 });
  });

  it("shares spans and events across the tree", () => {
    const root = ExecContext.create();
    const child = root.child("x");
    child.startSpan("in-child");
    child.event("did.something", { n: 1 });
    expect(root.spans.map((s) => s.name)).toEqual(["in-child"]);
    expect(root.events[0]).toMatchObject({
      name: "did.something",
      requestId: child.requestId,
      attributes: { n: 1 },
    });
  });

  it("rolls token usage up from children to every ancestor; a fork reports into its base", () => {
    const root = ExecContext.create();
    const child = root.child("a");
    const grandchild = child.child("b");
    grandchild.fork().recordTokens({ promptTokens: 10, completionTokens: 5, costUsd: 0.5 });
    child.recordTokens({ promptTokens: 1, completionTokens: 1, totalTokens: 3 });
    expect(grandchild.tokenUsage).toEqual({
      promptTokens: 10,
      completionTokens: 5,
      totalTokens: 15,
      costUsd: 0.5,
    });
    expect(child.tokenUsage).toEqual({
      promptTokens: 11,
      completionTokens: 6,
      totalTokens: 18,
      costUsd: 0.5,
    });
    expect(root.tokenUsage.totalTokens).toBe(18);
    expect(() => root.recordTokens({ promptTokens: -1 })).toThrow(/usage\.promptTokens/);
    expect(() => root.recordTokens({ promptTokens: 1.5 })).toThrow(NervaError);
    const big = ExecContext.create();
    big.child("a").recordTokens({ promptTokens: 2_000_000_000 });
    expect(() => big.child("b").recordTokens({ promptTokens: 2_000_000_000 })).toThrow(
      /would exceed 2147483647 tokens/,
    );
    expect(big.tokenUsage.promptTokens).toBe(2_000_000_000);
    expect(() => ExecContext.fromWire(big.toWire())).not.toThrow();
  });

  it("round-trips through the wire form of the published spec", () => {
    const ctx = ExecContext.create({
      userId: "u",
      permissions: { allowedAgents: ["a"] },
      timeoutSeconds: 30,
      metadata: { tenant: "acme" },
    });
    ctx.recordTokens({ promptTokens: 2, completionTokens: 3, costUsd: 0.25 });
    const wire = JSON.parse(JSON.stringify(ctx.child("a").toWire()));
    expect(wire).toMatchObject({
      created_at: expect.any(Number),
      timeout_at: (ctx.timeoutAt as number) / 1000,
      cancelled: false,
      metadata: { tenant: "acme" },
      spans: [],
      events: [],
    });
    const back = ExecContext.fromWire(wire);
    expect(back).toMatchObject({
      traceId: ctx.traceId,
      userId: "u",
      depth: 1,
      agentName: "a",
      timeoutAt: ctx.timeoutAt,
    });
    expect(back.metadata).toEqual({ tenant: "acme" });
    expect(back.permissions.canUseAgent("b")).toBe(false);
    expect(ExecContext.fromWire(ctx.toWire()).tokenUsage).toEqual(ctx.tokenUsage);
    expect(() => ExecContext.fromWire({ ...wire, depth: -1 })).toThrow(/context\.depth/);
  });

  it("includes the trace on request, with string attributes", () => {
    const ctx = ExecContext.create();
    ctx.startSpan("work", { n: 3, ok: true }).end();
    ctx.event("noted", { size: 2 });
    expect(ctx.toWire().spans).toEqual([]);
    const wire = ctx.toWire({ includeTrace: true });
    expect(wire.spans[0]).toMatchObject({
      name: "work",
      attributes: { n: "3", ok: "true" },
      status: "ok",
    });
    expect(wire.spans[0]?.ended_at).toBeGreaterThanOrEqual(wire.spans[0]?.started_at as number);
    expect(wire.events[0]).toMatchObject({
      name: "noted",
      attributes: { size: "2" },
      trace_id: ctx.traceId,
    });
  });

  it("reads what another implementation sends: extra fields ignored, cancelled honoured", () => {
    const fromPython = {
      request_id: "r-1",
      trace_id: "4bf92f3577b34da6a3ce929d0e0e4736",
      user_id: null,
      session_id: "s",
      permissions: { roles: ["user"] },
      memory_scope: "user",
      spans: [
        {
          span_id: "00f067aa0ba902b7",
          name: "llm.call",
          parent_id: null,
          started_at: 1763700000.5,
          attributes: {},
        },
      ],
      events: [],
      token_usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2, cost_usd: 0 },
      created_at: 1763700000.25,
      cancelled: true,
      metadata: {},
      stream_config: { enabled: false },
    };
    const ctx = ExecContext.fromWire(fromPython);
    expect(ctx.createdAt).toBe(1763700000250);
    expect(ctx.timeoutAt).toBeNull();
    expect(ctx.isCancelled()).toBe(true);
    expect(ctx.permissions.canUseTool("anything")).toBe(true);
    expect(() =>
      ExecContext.fromWire({ ...fromPython, permissions: { roles: [], allowedTools: [] } }),
    ).toThrow(/context\.permissions/);
  });

  it("carries metadata to children and validates it", () => {
    const ctx = ExecContext.create({ metadata: { tenant: "acme", plan: "pro" } });
    expect(ctx.child("x").metadata).toEqual({ tenant: "acme", plan: "pro" });
    expect(Object.isFrozen(ctx.metadata)).toBe(true);
    expect(ExecContext.create().metadata).toEqual({});
    expect(() => ExecContext.create({ metadata: { n: 1 } as never })).toThrow(
      /options\.metadata\.n/,
    );
  });
});

describe("traceparent helpers", () => {
  it("parses and formats W3C traceparent", () => {
    const header = formatTraceparent("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    expect(parseTraceparent(header)).toEqual({
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
      parentSpanId: "00f067aa0ba902b7",
      sampled: true,
    });
    for (const bad of [
      undefined,
      "",
      "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
    ]) {
      expect(parseTraceparent(bad)).toBeNull();
    }
  });
});

describe("error codes: options are configuration, wire documents are input", () => {
  const codeOf = (fn: () => unknown): string | undefined => {
    try {
      fn();
    } catch (err) {
      return (err as NervaError).code;
    }
    return undefined;
  };

  it("uses INVALID_OPTIONS for everything that configures a context", () => {
    expect(codeOf(() => ExecContext.create({ permissions: { roles: "admin" as never } }))).toBe(
      ErrorCode.INVALID_OPTIONS,
    );
    expect(codeOf(() => Permissions.create({ allowedTools: "search" as never }))).toBe(
      ErrorCode.INVALID_OPTIONS,
    );
    expect(codeOf(() => ExecContext.create().child(""))).toBe(ErrorCode.INVALID_OPTIONS);
    expect(codeOf(() => ExecContext.create().fork({ timeoutSeconds: -1 }))).toBe(
      ErrorCode.INVALID_OPTIONS,
    );
    expect(codeOf(() => ExecContext.key(""))).toBe(ErrorCode.INVALID_OPTIONS);
  });

  it("uses INVALID_INPUT for a wire context, and bounds its nesting before validating it", () => {
    const wire = ExecContext.create().toWire() as unknown as Record<string, unknown>;
    expect(codeOf(() => ExecContext.fromWire({ ...wire, permissions: { roles: "x" } }))).toBe(
      ErrorCode.INVALID_INPUT,
    );
    let deep: unknown = "x";
    for (let i = 0; i < 100_000; i++) deep = { a: deep };
    for (const field of ["metadata", "permissions", "token_usage", "spans", "extra_field"]) {
      let err: unknown;
      try {
        ExecContext.fromWire({ ...wire, [field]: deep });
      } catch (e) {
        err = e;
      }
      expect(err, field).toBeInstanceOf(NervaError);
      expect((err as NervaError).code).toBe(ErrorCode.INVALID_INPUT);
      expect((err as NervaError).message).toMatch(/^Invalid context: nested deeper than/);
    }
  });
});

describe("ExecContext kept for many calls", () => {
  it("keeps the first 10,000 spans and events of its tree; its trace sink gets every one", () => {
    const sink = new MemoryTraceSink({ maxSpans: 20_000, maxEvents: 20_000 });
    const ctx = ExecContext.create({ traceSink: sink });
    const child = ctx.fork({});
    for (let i = 0; i < 10_050; i++) {
      (i % 2 === 0 ? ctx : child).startSpan(`call-${i}`).end();
      ctx.event(`e-${i}`);
    }
    expect(ctx.spans).toHaveLength(10_000);
    expect(ctx.spans[0]?.name).toBe("call-0");
    expect(ctx.spans.at(-1)?.name).toBe("call-9999");
    expect(ctx.events).toHaveLength(10_000);
    expect(sink.started).toBe(10_050);
    expect(sink.spans).toHaveLength(10_050);
    expect(sink.events).toHaveLength(10_050);
  });
});
