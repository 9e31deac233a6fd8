import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import { TieredMemory } from "../memory/tiered-memory.js";
import type { Middleware } from "../middleware/types.js";
import { MetricsMiddleware } from "../middleware/metrics.js";
import { InMemoryRegistry } from "../registry/in-memory-registry.js";
import { RuleRouter } from "../router/rule-router.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { FunctionToolManager, defineTool } from "../tools/function-tool-manager.js";
import type { Span } from "../context/span.js";
import { ChunkQueue } from "./chunk-queue.js";
import { Orchestrator } from "./orchestrator.js";

const runtimes: InProcessRuntime[] = [];
afterEach(async () => {
  for (const r of runtimes.splice(0)) await r.close();
});

function setup(extra: Partial<ConstructorParameters<typeof Orchestrator>[0]> = {}) {
  const runtime = new InProcessRuntime({ timeoutSeconds: 5 });
  runtimes.push(runtime);
  const router = new RuleRouter({
    rules: [
      { handler: "echo", pattern: "^echo\\b" },
      { handler: "picky", keywords: ["book"], score: 1 },
      { handler: "booker", keywords: ["book"], score: 0.9 },
    ],
    defaultHandler: "fallback",
  });
  runtime.register("echo", async (input) => `echo: ${input.message}`);
  runtime.register("picky", async () => ({ status: "wrong_handler", error: "not mine" }));
  runtime.register("booker", async (input) => `booked (${input.message})`);
  runtime.register("fallback", async () => "I cannot help with that.");
  const orchestrator = new Orchestrator({ router, runtime, ...extra });
  return { runtime, router, orchestrator };
}

const ctxOf = () => ExecContext.create({ userId: "u1", sessionId: "s1" });

/** The span tree as nested [name, children] pairs (handler names appended). */
function tree(spans: readonly Span[], parent: string | null = null): unknown[] {
  const ids = new Set(spans.map((s) => s.id));
  return spans
    .filter((s) =>
      parent === null ? s.parentId === null || !ids.has(s.parentId) : s.parentId === parent,
    )
    .map((s) => {
      const h = s.attributes["handler"] ?? s.attributes["tool"];
      const label = typeof h === "string" && s.name !== "handle" ? `${s.name} ${h}` : s.name;
      const children = tree(spans, s.id);
      return children.length === 0 ? label : [label, children];
    });
}

describe("Orchestrator.handle", () => {
  it("routes, invokes and answers with text, status, handler, data and error", async () => {
    const { orchestrator } = setup();
    const response = await orchestrator.handle("echo hello", ctxOf());
    expect(response).toEqual({
      text: "echo: echo hello",
      status: "success",
      handler: "echo",
      data: {},
      error: null,
      truncated: false,
    });
  });

  it("falls through ranked candidates when a handler answers wrong_handler", async () => {
    const { orchestrator } = setup();
    const ctx = ctxOf();
    const response = await orchestrator.handle("book a table", ctx);
    expect(response).toMatchObject({
      status: "success",
      handler: "booker",
      text: "booked (book a table)",
    });
    expect(ctx.events.find((e) => e.name === "orchestrator.fallthrough")?.attributes).toEqual({
      from: "picky",
      to: "booker",
    });
    const invoked = ctx.spans
      .filter((s) => s.name === "runtime.invoke")
      .map((s) => s.attributes["handler"]);
    expect(invoked).toEqual(["picky", "booker"]);
  });

  it("stops after maxCandidates and answers wrong_handler when nobody takes the message", async () => {
    const { orchestrator } = setup({ maxCandidates: 1 });
    const response = await orchestrator.handle("book a table", ctxOf());
    // The handler's reason is operator text: clients get a fixed line, the span keeps the reason.
    expect(response).toMatchObject({
      status: "wrong_handler",
      handler: "picky",
      error: "no handler accepted it",
    });
    expect(response.text).toContain("Could not handle this request: no handler accepted it");

    const runtime = new InProcessRuntime();
    runtimes.push(runtime);
    const none = new Orchestrator({ router: new RuleRouter({ rules: [] }), runtime });
    const empty = await none.handle("anything", ctxOf());
    expect(empty).toMatchObject({
      status: "wrong_handler",
      handler: "",
      error: "no handler accepted it",
    });
  });

  it("passes payloads through middleware and stops at a throwing one (onError sees it)", async () => {
    const seen: string[] = [];
    const rewrite: Middleware = {
      name: "rewrite",
      beforeRoute: (m) => m.replace(/^please /, ""),
      beforeInvoke: (r) => ({
        ...r,
        input: { ...r.input, message: r.input.message.toUpperCase() },
      }),
      beforeRespond: (res) => ({ ...res, text: `${res.text}!` }),
      onError: (err, _ctx, stage) => void seen.push(`${stage}: ${(err as Error).message}`),
    };
    const { orchestrator, runtime } = setup({ middleware: [rewrite] });
    expect((await orchestrator.handle("please echo hi", ctxOf())).text).toBe("echo: ECHO HI!");

    let ran = 0;
    runtime.register("guarded", async () => {
      ran++;
      return "should not run";
    });
    const guard: Middleware = {
      name: "auth",
      beforeInvoke: () => {
        throw new NervaError(ErrorCode.UNAUTHENTICATED, "token expired");
      },
    };
    const metrics = new MetricsMiddleware();
    const o2 = new Orchestrator({
      router: new RuleRouter({ rules: [], defaultHandler: "guarded" }),
      runtime,
      middleware: [rewrite, guard, metrics],
    });
    await expect(o2.handle("anything", ctxOf())).rejects.toMatchObject({
      code: ErrorCode.UNAUTHENTICATED,
    });
    expect(ran).toBe(0);
    expect(seen).toEqual(["before_invoke: token expired"]);
    expect(metrics.get("errors_total", { stage: "before_invoke", code: "UNAUTHENTICATED" })).toBe(
      1,
    );
    expect(metrics.get("responses_total", { status: "success" })).toBe(0);

    const broken: Middleware = { name: "broken", afterInvoke: () => undefined as never };
    const o3 = new Orchestrator({
      router: new RuleRouter({ rules: [], defaultHandler: "echo" }),
      runtime,
      middleware: [broken],
    });
    await expect(o3.handle("x", ctxOf())).rejects.toThrow(/Middleware "broken"\.afterInvoke/);
  });

  it("records a span tree like the Architecture's example", async () => {
    const tools = new FunctionToolManager()
      .register(
        defineTool({
          name: "search_flights",
          description: "Finds flights",
          parameters: z.object({ to: z.string() }),
          run: ({ to }) => [`LH123 to ${to}`],
        }),
      )
      .register(
        defineTool({
          name: "calendar",
          description: "Free slots",
          parameters: z.object({}),
          run: () => "Tuesday 10:00",
        }),
      );
    const memory = new TieredMemory();
    const runtime = new InProcessRuntime();
    runtimes.push(runtime);
    const orchestrator = new Orchestrator({
      router: new RuleRouter({
        rules: [
          { handler: "flight_agent", keywords: ["flight"] },
          { handler: "calendar_agent", keywords: ["calendar"] },
        ],
      }),
      runtime,
      tools,
      memory,
    });
    runtime.register(
      "flight_agent",
      orchestrator.handler(async (input, _ctx, kit) => {
        await kit.memory.recall(input.message);
        const flights = await kit.tools.call("search_flights", { to: "BER" });
        const slot = await kit.delegate("calendar_agent", "next Tuesday");
        return `Found ${JSON.stringify(flights.output)}; ${slot.output}`;
      }),
    );
    runtime.register(
      "calendar_agent",
      orchestrator.handler(async (_input, _ctx, kit) =>
        String((await kit.tools.call("calendar")).output),
      ),
    );
    const ctx = ctxOf();
    const response = await orchestrator.handle("Book me a flight to Berlin", ctx);
    expect(response.text).toBe('Found ["LH123 to BER"]; Tuesday 10:00');
    expect(tree(ctx.spans)).toEqual([
      [
        "handle",
        [
          "router.classify",
          "tools.discover",
          [
            "runtime.invoke flight_agent",
            [
              "memory.recall",
              "tools.call search_flights",
              [
                "delegate calendar_agent",
                [["runtime.invoke calendar_agent", ["tools.call calendar"]]],
              ],
            ],
          ],
          "responder.format",
          "memory.store",
          "memory.store",
        ],
      ],
    ]);
    expect(ctx.spans.every((s) => s.ended && s.traceId === ctx.traceId)).toBe(true);
  });

  it("lists the tools the context may use in AgentInput.tools", async () => {
    const tools = new FunctionToolManager()
      .register(
        defineTool({
          name: "open",
          description: "Open tool",
          parameters: z.object({ q: z.string() }),
          run: () => 1,
        }),
      )
      .register(
        defineTool({
          name: "secret",
          description: "Secret tool",
          parameters: z.object({}),
          run: () => 2,
        }),
      );
    const { runtime } = setup({ tools });
    runtime.register("lister", async (input) =>
      input.tools.map((t) => `${t.name}:${t.parameters}`).join(" | "),
    );
    const o = new Orchestrator({
      router: new RuleRouter({ rules: [], defaultHandler: "lister" }),
      runtime,
      tools,
    });
    const ctx = ExecContext.create({ userId: "u1", permissions: { allowedTools: ["open"] } });
    const response = await o.handle("which tools?", ctx);
    expect(response.text).toMatch(/^open:\{.*"q".*\}$/);
    const all = await o.handle("which tools?", ctxOf());
    expect(all.text).toMatch(/^open:.* \| secret:/);
  });

  it("counts handler and tool invocations in the registry", async () => {
    const registry = new InMemoryRegistry();
    const tools = new FunctionToolManager().register(
      defineTool({
        name: "ping",
        description: "Ping",
        parameters: z.object({}),
        run: () => "pong",
      }),
    );
    const runtime = new InProcessRuntime();
    runtimes.push(runtime);
    const o = new Orchestrator({
      router: new RuleRouter({ rules: [], defaultHandler: "pinger" }),
      runtime,
      tools,
      registry,
    });
    runtime.register(
      "pinger",
      o.handler(async (_i, _c, kit) => String((await kit.tools.call("ping")).output)),
      { description: "Pings" },
    );
    const ctx = ctxOf();
    await o.handle("a", ctx);
    await o.handle("b", ctx);
    expect(await registry.get("agent", "pinger", ctx)).toMatchObject({
      description: "Pings",
      health: "healthy",
    });
    expect(await registry.stats("agent", "pinger", ctx)).toMatchObject({ count: 2, failures: 0 });
    expect(await registry.stats("tool", "ping", ctx)).toMatchObject({ count: 2 });
  });

  it("remembers the turns of a successful exchange, and skips memory without the identity", async () => {
    const memory = new TieredMemory();
    const { orchestrator } = setup({ memory });
    const ctx = ctxOf();
    await orchestrator.handle("echo one", ctx);
    const { hot } = await memory.recall("", ctx);
    expect(hot.map((t) => [t.role, t.content])).toEqual([
      ["user", "echo one"],
      ["assistant", "echo: echo one"],
    ]);
    const anonymous = ExecContext.create({});
    const response = await orchestrator.handle("echo two", anonymous);
    expect(response.status).toBe("success");
    expect(anonymous.events.find((e) => e.name === "memory.error")?.attributes["error"]).toContain(
      "ctx.sessionId",
    );
  });

  it("stores nothing of an answer a beforeRespond hook refused", async () => {
    const memory = new TieredMemory();
    const censor: Middleware = {
      name: "censor",
      beforeRespond: (response) => {
        if (response.text.includes("secret")) throw new NervaError(ErrorCode.POLICY_DENIED, "no");
        return response;
      },
    };
    const { orchestrator } = setup({ memory, middleware: [censor] });
    const ctx = ctxOf();
    await expect(orchestrator.handle("echo the secret", ctx)).rejects.toMatchObject({
      code: ErrorCode.POLICY_DENIED,
    });
    expect((await memory.recall("", ctxOf())).hot).toEqual([]);
    expect(ctx.spans.some((s) => s.name === "memory.store")).toBe(false);
    // An answer the hook lets through is stored as before.
    await orchestrator.handle("echo fine", ctxOf());
    expect((await memory.recall("", ctxOf())).hot.map((t) => t.content)).toEqual([
      "echo fine",
      "echo: echo fine",
    ]);
  });

  it("fails closed when the policy itself fails", async () => {
    let ran = 0;
    const runtime = new InProcessRuntime();
    runtimes.push(runtime);
    const tools = new FunctionToolManager().register(
      defineTool({
        name: "wipe",
        description: "Wipes",
        parameters: z.object({}),
        run: () => void ran++,
      }),
    );
    const broken = (failAt: string) => ({
      evaluate: async (action: { checkpoint: string }) => {
        if (action.checkpoint === failAt) throw new Error("policy store unreachable");
        return {
          effect: "allow" as const,
          checkpoint: action.checkpoint as "before_route",
          code: null,
          reason: "ok",
          rule: null,
        };
      },
      charge: async () => undefined,
    });
    // Each orchestrator adapts its own handler: a kit belongs to the orchestrator that made it.
    const make = (failAt: string) => {
      const name = `wiper_${failAt}`;
      const o = new Orchestrator({
        router: new RuleRouter({ rules: [], defaultHandler: name }),
        runtime,
        tools,
        policy: broken(failAt),
      });
      runtime.register(
        name,
        o.handler(async (_i, _c, kit) => {
          ran += 10;
          const r = await kit.tools.call("wipe");
          return { status: r.status === "success" ? "success" : "error", error: r.error };
        }),
      );
      return o;
    };
    for (const failAt of ["before_route", "before_invoke"]) {
      const ctx = ctxOf();
      await expect(make(failAt).handle("wipe it", ctx)).rejects.toMatchObject({
        code: ErrorCode.POLICY_DENIED,
      });
      expect(ctx.events.some((e) => e.name === "policy.error")).toBe(true);
    }
    expect(ran).toBe(0);
    // Failing during execution: the handler runs, its tool call is refused and never runs.
    const duringCtx = ctxOf();
    const during = await make("during_execution").handle("wipe it", duringCtx);
    expect(during.status).toBe("error");
    // The handler returned the refusal as its own (untyped) error text: on the span, not to clients.
    expect(during.error).toBe("the agent failed");
    const invoke = duringCtx.spans.find((s) => s.name === "runtime.invoke");
    expect(invoke?.error).toContain("POLICY_DENIED: The policy failed (policy store unreachable)");
    expect(ran).toBe(10);
  });

  it("refuses when the policy answers something that is not a decision", async () => {
    const runtime = new InProcessRuntime().register("agent", async () => "ran");
    runtimes.push(runtime);
    for (const answer of [undefined, null, { effect: "maybe" }, "allow"]) {
      const o = new Orchestrator({
        router: new RuleRouter({ rules: [], defaultHandler: "agent" }),
        runtime,
        policy: { evaluate: async () => answer as never, charge: async () => undefined },
      });
      const ctx = ctxOf();
      const err = await o.handle("go", ctx).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: ErrorCode.POLICY_DENIED });
      expect((err as Error).message).toMatch(/^The policy failed \(it answered /);
      expect(ctx.events.some((e) => e.name === "policy.error")).toBe(true);
    }
  });

  it("validates its options and arguments, naming the field", async () => {
    const runtime = new InProcessRuntime();
    runtimes.push(runtime);
    expect(() => new Orchestrator({ router: {} as never, runtime })).toThrow(/options\.router/);
    expect(
      () => new Orchestrator({ router: new RuleRouter({ rules: [] }), runtime, maxCandidates: 0 }),
    ).toThrow(/options\.maxCandidates/);
    expect(
      () =>
        new Orchestrator({ router: new RuleRouter({ rules: [] }), runtime, memory: {} as never }),
    ).toThrow(/options\.memory: must implement Memory/);
    const { orchestrator } = setup();
    await expect(orchestrator.handle(42 as never, ctxOf())).rejects.toThrow(/Invalid message/);
    // A body without a message (jsonBodyOf(req).message is undefined) says what is missing.
    const missing = await orchestrator.handle(undefined as never, ctxOf()).catch((e: unknown) => e);
    expect(missing).toMatchObject({
      code: "INVALID_INPUT",
      issues: [{ path: "message", message: "required" }],
    });
    expect((missing as Error).message).not.toContain("got undefined");
    await expect(orchestrator.handle("x", {} as never)).rejects.toThrow(/ctx/);
    expect(() => orchestrator.handler("nope" as never)).toThrow(/needs a function/);
  });
});

describe("Orchestrator.stream", () => {
  it("pushes chunks as the handler produces them", async () => {
    const { runtime } = setup();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    runtime.register("story", async function* () {
      yield "Once ";
      // Blocks until the test has received the first chunk: buffering to the end would deadlock.
      await gate;
      yield "upon a time";
    });
    const o = new Orchestrator({
      router: new RuleRouter({ rules: [], defaultHandler: "story" }),
      runtime,
    });
    const stream = o.stream("tell me", ctxOf());
    const chunks: string[] = [];
    for await (const chunk of stream) {
      chunks.push(chunk);
      if (chunks.length === 1) release();
    }
    expect(chunks).toEqual(["Once ", "upon a time"]);
    expect(await stream.response).toMatchObject({ status: "success", text: "Once upon a time" });
  });

  it("yields one final chunk for a handler that does not stream", async () => {
    const { orchestrator } = setup();
    const chunks: string[] = [];
    for await (const chunk of orchestrator.stream("echo hi", ctxOf())) chunks.push(chunk);
    expect(chunks).toEqual(["echo: echo hi"]);
  });

  it("cancels the handler when the consumer stops reading", async () => {
    const { runtime } = setup();
    let aborted = false;
    runtime.register("endless", async function* (_input, ctx) {
      ctx.signal.addEventListener("abort", () => (aborted = true));
      for (let i = 0; ; i++) {
        yield `${i} `;
        await new Promise((r) => setImmediate(r));
      }
    });
    const o = new Orchestrator({
      router: new RuleRouter({ rules: [], defaultHandler: "endless" }),
      runtime,
    });
    const ctx = ctxOf();
    const stream = o.stream("go", ctx);
    let count = 0;
    for await (const _chunk of stream) if (++count === 3) break;
    const response = await stream.response;
    expect(aborted).toBe(true);
    expect(response.status).toBe("error");
    const invoke = ctx.spans.find((s) => s.name === "runtime.invoke");
    expect(invoke?.error).toContain("stream consumer stopped");
  });

  it("rejects the iteration with the error of a failed request", async () => {
    const guard: Middleware = {
      beforeRoute: () => {
        throw new NervaError(ErrorCode.POLICY_DENIED, "closed today");
      },
    };
    const { orchestrator } = setup({ middleware: [guard] });
    const stream = orchestrator.stream("echo hi", ctxOf());
    await expect(
      (async () => {
        for await (const _chunk of stream) void _chunk;
      })(),
    ).rejects.toMatchObject({ code: ErrorCode.POLICY_DENIED });
    await expect(stream.response).rejects.toThrow("closed today");
  });

  it("handle() formats streamed chunks into ctx.stream when the caller gave one", async () => {
    const { runtime } = setup();
    runtime.register("words", async function* () {
      yield "a ";
      yield "b";
    });
    const o = new Orchestrator({
      router: new RuleRouter({ rules: [], defaultHandler: "words" }),
      runtime,
      responder: {
        format: async (r) => ({
          text: r.output,
          status: r.status,
          handler: r.handler,
          data: r.data,
          error: r.error,
          truncated: false,
        }),
        formatChunk: (c) => c.toUpperCase(),
        endStream: () => "<end>",
      },
    });
    const got: string[] = [];
    const response = await o.handle(
      "x",
      ExecContext.create({ stream: { push: (c) => void got.push(c) } }),
    );
    expect(got).toEqual(["A ", "B", "<end>"]);
    expect(response.text).toBe("a b");
  });
});

describe("ChunkQueue", () => {
  it("applies backpressure above the high-water mark and releases producers on cancel", async () => {
    let cancelled = 0;
    const queue = new ChunkQueue(
      () => undefined,
      () => void cancelled++,
    );
    const results: unknown[] = [];
    for (let i = 0; i < 40; i++) results.push(queue.push(String(i)));
    const waiting = results.filter((r) => r instanceof Promise);
    expect(waiting.length).toBe(9);
    let released = false;
    void Promise.all(waiting).then(() => (released = true));
    expect((await queue.next()).value).toBe("0");
    await new Promise((r) => setImmediate(r));
    expect(released).toBe(false);
    // Once the consumer has taken the buffer below the mark, waiting producers resume.
    for (let i = 1; i <= 8; i++) expect((await queue.next()).value).toBe(String(i));
    await new Promise((r) => setImmediate(r));
    expect(released).toBe(true);
    await queue.return();
    expect(cancelled).toBe(1);
    expect(await queue.next()).toEqual({ value: undefined, done: true });
  });
});
