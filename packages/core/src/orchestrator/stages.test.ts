// The orchestrator, not each implementation, opens the stage spans: a user's own router,
// responder, memory and tool manager (plain objects here, recording nothing) are traced exactly
// like the built-in ones, and spans they open themselves nest under the stage span.
import { afterEach, describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import type { Span } from "../context/span.js";
import type { Memory, MemoryItem } from "../memory/types.js";
import { PassthroughResponder } from "../responder/passthrough-responder.js";
import type { Responder } from "../responder/types.js";
import { RuleRouter } from "../router/rule-router.js";
import type { Router } from "../router/types.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import type { ToolManager } from "../tools/types.js";
import { Orchestrator } from "./orchestrator.js";

const runtimes: InProcessRuntime[] = [];
afterEach(async () => {
  for (const r of runtimes.splice(0)) await r.close();
});

const item = (content: string): MemoryItem => ({
  id: content,
  kind: "turn",
  role: "user",
  key: null,
  content,
  metadata: {},
  createdAt: 0,
});

/** Implementations of the user's own; each opens one child span of its own. */
function own() {
  const router: Router = {
    classify: async (_message, ctx) => {
      ctx.startSpan("my.router.lookup").end();
      const best = { name: "agent", score: 0.9, reason: "mine" };
      return { candidates: [best], best };
    },
  };
  const responder: Responder = {
    format: async (result, _channel, ctx) => {
      ctx.startSpan("my.responder.render").end();
      return {
        text: result.output.toUpperCase(),
        status: result.status,
        handler: result.handler,
        data: result.data,
        error: result.error,
        truncated: false,
      };
    },
    formatChunk: (chunk) => chunk,
  };
  const stored: string[] = [];
  const memory: Memory = {
    recall: async (_q, ctx) => {
      ctx.startSpan("my.memory.read").end();
      return { scope: ctx.memoryScope, hot: [item("earlier")], warm: [], cold: [] };
    },
    store: async (event) => {
      stored.push(event.content);
      return item(event.content);
    },
    close: async () => undefined,
  };
  const tools: ToolManager = {
    discover: async () => [{ name: "lookup", description: "Looks up", parameters: {} }],
    call: async (name, _args, ctx) => {
      ctx.startSpan("my.tool.http").end();
      return { status: "success", output: `${name} ok`, error: null, durationMs: 1 };
    },
    toolNames: () => ["lookup"],
    close: async () => undefined,
  };
  return { router, responder, memory, tools, stored };
}

/** The span tree as nested [name, children] pairs. */
function tree(spans: readonly Span[], parent: string | null = null): unknown[] {
  return spans
    .filter((s) => s.parentId === parent)
    .map((s) => {
      const children = tree(spans, s.id);
      return children.length === 0 ? s.name : [s.name, children];
    });
}

describe("stage spans", () => {
  it("are the orchestrator's, around implementations of the user's own", async () => {
    const { router, responder, memory, tools, stored } = own();
    const runtime = new InProcessRuntime();
    runtimes.push(runtime);
    const o = new Orchestrator({ router, responder, memory, tools, runtime });
    runtime.register(
      "agent",
      o.handler(async (_input, _ctx, kit) => {
        const { hot } = await kit.memory.recall("x");
        const r = await kit.tools.call("lookup", {});
        await kit.memory.store({ kind: "fact", content: "learned" });
        return `${hot.length} ${String(r.output)}`;
      }),
    );
    const ctx = ExecContext.create({ userId: "u1", sessionId: "s1" });
    const response = await o.handle("hello", ctx);
    expect(response.text).toBe("1 LOOKUP OK");
    expect(tree(ctx.spans)).toEqual([
      [
        "handle",
        [
          ["router.classify", ["my.router.lookup"]],
          "tools.discover",
          [
            "runtime.invoke",
            [
              ["memory.recall", ["my.memory.read"]],
              ["tools.call", ["my.tool.http"]],
              "memory.store",
            ],
          ],
          ["responder.format", ["my.responder.render"]],
          "memory.store",
          "memory.store",
        ],
      ],
    ]);
    const attrs = (name: string) => ctx.spans.find((s) => s.name === name)?.attributes;
    expect(attrs("router.classify")).toEqual({ candidates: 1, best: "agent", score: 0.9 });
    expect(attrs("tools.discover")).toEqual({ tools: 1 });
    expect(attrs("tools.call")).toEqual({ tool: "lookup", status: "success" });
    expect(attrs("memory.recall")).toEqual({ scope: "session", hot: 1, warm: 0, cold: 0 });
    expect(attrs("responder.format")).toEqual({
      status: "success",
      channel: "plain",
      length: 11,
      truncated: false,
    });
    expect(ctx.spans.filter((s) => s.name === "memory.store").map((s) => s.attributes)).toEqual([
      { scope: "session", kind: "fact" },
      { scope: "session", kind: "turn" },
      { scope: "session", kind: "turn" },
    ]);
    expect(stored).toEqual(["learned", "hello", "1 lookup ok"]);
    expect(ctx.spans.every((s) => s.ended)).toBe(true);
  });

  it("nest the spans of a subclass of a built-in that opens spans (spanless: false) too", async () => {
    class TracedRouter extends RuleRouter {
      override readonly spanless = false;
      override async classify(message: string, ctx: ExecContext) {
        ctx.startSpan("my.router.audit").end();
        return super.classify(message, ctx);
      }
    }
    class TracedResponder extends PassthroughResponder {
      override readonly spanless = false;
      override async format(...args: Parameters<PassthroughResponder["format"]>) {
        args[2].startSpan("my.responder.audit").end();
        return super.format(...args);
      }
    }
    const runtime = new InProcessRuntime().register("agent", async () => "fine");
    runtimes.push(runtime);
    const o = new Orchestrator({
      router: new TracedRouter({ rules: [], defaultHandler: "agent" }),
      responder: new TracedResponder(),
      runtime,
    });
    const ctx = ExecContext.create();
    await o.handle("x", ctx);
    expect(tree(ctx.spans)).toEqual([
      [
        "handle",
        [
          ["router.classify", ["my.router.audit"]],
          "runtime.invoke",
          ["responder.format", ["my.responder.audit"]],
        ],
      ],
    ]);
  });

  it("end in error with the failure of the implementation, which the request reports", async () => {
    const runtime = new InProcessRuntime().register("agent", async () => "fine");
    runtimes.push(runtime);
    const broken: Router = {
      classify: async () => {
        throw new Error("router index unavailable");
      },
    };
    const ctx = ExecContext.create();
    await expect(new Orchestrator({ router: broken, runtime }).handle("x", ctx)).rejects.toThrow(
      "router index unavailable",
    );
    const span = ctx.spans.find((s) => s.name === "router.classify");
    expect([span?.status, span?.error]).toEqual(["error", "router index unavailable"]);

    // A router that resolves something that is not a route is a clear error, not a TypeError.
    const careless = { classify: async () => undefined } as unknown as Router;
    await expect(
      new Orchestrator({ router: careless, runtime }).handle("x", ExecContext.create()),
    ).rejects.toThrow(/router's classify returned no route/);
  });
});

describe("spanless implementations", () => {
  it("any router may declare itself spanless; the built-in gets no special treatment", async () => {
    const runtime = new InProcessRuntime().register("agent", async () => "fine");
    runtimes.push(runtime);
    const seen: Record<string, string | null> = {};
    const routerNamed = (name: string, spanless: boolean | undefined): Router => ({
      ...(spanless === undefined ? {} : { spanless }),
      classify: async (_message, ctx) => {
        seen[name] = ctx.currentSpanId;
        return { candidates: [{ name: "agent", score: 1, reason: "" }], best: null };
      },
    });
    for (const [name, spanless] of [
      ["declared", true],
      ["unset", undefined],
      ["false", false],
    ] as const) {
      const ctx = ExecContext.create();
      await new Orchestrator({ router: routerNamed(name, spanless), runtime }).handle("x", ctx);
      const byName = (n: string) => ctx.spans.find((s) => s.name === n)!.id;
      // A spanless router is called with the request's context (current span: handle); any
      // other runs in a fork under router.classify. Same trace either way.
      expect(seen[name], name).toBe(byName(spanless === true ? "handle" : "router.classify"));
    }
    expect(new RuleRouter({ rules: [], defaultHandler: "agent" }).spanless).toBe(true);
    expect(new PassthroughResponder().spanless).toBe(true);
  });
});
