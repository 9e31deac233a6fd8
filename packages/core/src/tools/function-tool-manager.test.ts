import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import { FunctionToolManager, defineTool } from "./function-tool-manager.js";

const ctx = (allowedTools: string[] | null = null, timeoutSeconds?: number) =>
  ExecContext.create({ userId: "u1", permissions: { allowedTools }, timeoutSeconds });

const add = defineTool({
  name: "add",
  description: "Adds two numbers",
  parameters: z.object({ a: z.number(), b: z.number().default(0) }),
  run: ({ a, b }) => a + b,
});

function thrown(fn: () => unknown): NervaError {
  try {
    fn();
  } catch (err) {
    if (err instanceof NervaError) return err;
    throw err;
  }
  throw new Error("expected a NervaError");
}

describe("FunctionToolManager", () => {
  it("calls a tool with validated, defaulted arguments", async () => {
    const tools = new FunctionToolManager({ tools: [add] });
    const r = await tools.call("add", { a: 2 }, ctx());
    expect(r).toMatchObject({ status: "success", output: 2, error: null });
    expect(r.durationMs).toBeGreaterThanOrEqual(0);
    expect((await tools.call("add", { a: 2, b: 3 }, ctx())).output).toBe(5);
  });

  it("rejects invalid arguments without running the tool, naming each bad field", async () => {
    let ran = false;
    const tools = new FunctionToolManager().register(
      defineTool({
        name: "book",
        description: "Books a seat",
        parameters: z.object({
          seat: z.string().regex(/^\d+[A-F]$/),
          passengers: z.number().int().min(1),
        }),
        run: () => {
          ran = true;
        },
      }),
    );
    const r = await tools.call("book", { seat: "Z9", passengers: 0 }, ctx());
    expect(r.status).toBe("error");
    expect(r.output).toBeNull();
    expect(r.error).toMatch(
      /^Invalid arguments for tool "book": args\.seat: .*; args\.passengers: .*>=1/,
    );
    expect(ran).toBe(false);
    expect((await tools.call("book", "not an object", ctx())).error).toContain("args: ");
  });

  it("exposes the JSON Schema of the parameters for LLM tool calling", async () => {
    const tools = new FunctionToolManager({ tools: [add] });
    const [info] = await tools.discover(ctx());
    expect(info).toEqual({
      name: "add",
      description: "Adds two numbers",
      parameters: {
        type: "object",
        properties: { a: { type: "number" }, b: { type: "number", default: 0 } },
        required: ["a"],
      },
    });
    expect(Object.isFrozen(info?.parameters)).toBe(true);
  });

  it("lists and runs only tools the context may use", async () => {
    const tools = new FunctionToolManager({
      tools: [add, { ...add, name: "secret", run: () => "classified" }],
    });
    const c = ctx(["add"]);
    expect((await tools.discover(c)).map((t) => t.name)).toEqual(["add"]);
    const r = await tools.call("secret", {}, c);
    expect(r.status).toBe("permission_denied");
    expect(r.error).toContain('may not use tool "secret"');
    expect(c.events.map((e) => [e.name, e.attributes["tool"]])).toContainEqual([
      "tools.permission_denied",
      "secret",
    ]);
    // Unknown names: not_found, listing only what the context may use.
    const missing = await tools.call("nope", {}, ctx());
    expect(missing).toMatchObject({
      status: "not_found",
      error: 'Unknown tool "nope" (available: add, secret).',
    });
    expect((await tools.call("add", {}, ctx(["nope"]))).status).toBe("permission_denied");
  });

  it("turns a throwing tool into an error result", async () => {
    const tools = new FunctionToolManager().register(
      defineTool({
        name: "boom",
        description: "Throws",
        parameters: z.object({}),
        run: async () => {
          throw new Error("database unreachable");
        },
      }),
    );
    const r = await tools.call("boom", {}, ctx());
    expect(r).toMatchObject({ status: "error", error: 'Tool "boom" failed: database unreachable' });
  });

  it("times out at the tool's timeout even if the tool ignores its signal", async () => {
    let signal: AbortSignal | undefined;
    const tools = new FunctionToolManager().register(
      defineTool({
        name: "hang",
        description: "Never finishes",
        parameters: z.object({}),
        timeoutSeconds: 0.1,
        run: (_args, call) => {
          signal = call.signal;
          return new Promise(() => {});
        },
      }),
    );
    const c = ctx();
    const r = await tools.call("hang", {}, c);
    expect(r.status).toBe("timeout");
    expect(r.error).toMatch(/^Tool "hang" timed out after \d+ ms \(tool timeout of 0\.1 s\)\.$/);
    expect(r.durationMs).toBeGreaterThanOrEqual(90);
    expect(r.durationMs).toBeLessThan(2000);
    expect(signal?.aborted).toBe(true);
    expect(c.isCancelled() || c.isTimedOut()).toBe(false); // the request goes on
  });

  it("honours the request's deadline when it comes before the tool's timeout", async () => {
    const tools = new FunctionToolManager({ timeoutSeconds: 60 }).register(
      defineTool({
        name: "slow",
        description: "Waits for its signal",
        parameters: z.object({}),
        run: (_args, { signal }) =>
          new Promise((_resolve, reject) =>
            signal.addEventListener("abort", () => reject(signal.reason)),
          ),
      }),
    );
    const r = await tools.call("slow", {}, ctx(null, 0.1));
    expect(r.status).toBe("timeout");
    expect(r.error).toContain("the request's deadline");
  });

  it("stops when the request is cancelled", async () => {
    const tools = new FunctionToolManager().register(
      defineTool({
        name: "wait",
        description: "Waits",
        parameters: z.object({}),
        run: () => new Promise(() => {}),
      }),
    );
    const c = ctx();
    const pending = tools.call("wait", {}, c);
    c.cancel("user left");
    const r = await pending;
    expect(r.status).toBe("error");
    expect(r.error).toMatch(/^Tool "wait" was cancelled after \d+ ms: .*user left/);
    const already = await tools.call("wait", {}, c);
    expect(already.status).toBe("error");
  });

  it("runs a tool under the caller's span (the orchestrator opens tools.call), adding none", async () => {
    const tools = new FunctionToolManager().register(
      defineTool({
        name: "traced",
        description: "Opens a span",
        parameters: z.object({}),
        run: (_a, call) => {
          call.ctx.startSpan("db.query").end();
          return "ok";
        },
      }),
    );
    const root = ctx();
    const stage = root.startSpan("tools.call");
    await tools.call("traced", {}, root.fork({ span: stage }));
    await tools.call("missing", {}, root);
    expect(root.spans.map((s) => [s.name, s.parentId])).toEqual([
      ["tools.call", null],
      ["db.query", stage.id],
    ]);
  });

  it("resolves error after close()", async () => {
    const tools = new FunctionToolManager({ tools: [add] });
    await tools.close();
    expect(await tools.call("add", { a: 1 }, ctx())).toMatchObject({
      status: "error",
      error: "The tool manager is closed.",
    });
  });

  it("rejects invalid definitions naming the field", () => {
    const m = new FunctionToolManager();
    expect(thrown(() => m.register({ ...add, name: "has space" })).issues[0]?.path).toBe(
      "tool.name",
    );
    expect(thrown(() => m.register({ ...add, parameters: {} as never })).issues[0]?.path).toBe(
      "tool.parameters",
    );
    const notObject = thrown(() => m.register({ ...add, parameters: z.string() } as never));
    expect(notObject.message).toContain("tool.parameters: must be an object schema");
    const noJson = thrown(() =>
      m.register({ ...add, parameters: z.object({ when: z.date() }) } as never),
    );
    expect(noJson.message).toContain("cannot be expressed as JSON Schema");
    const dup = thrown(() => new FunctionToolManager({ tools: [add, add] }));
    expect(dup.message).toContain('options.tools.1.name: tool "add" is already registered');
    expect(dup.code).toBe(ErrorCode.INVALID_OPTIONS);
    expect(thrown(() => new FunctionToolManager({ timeoutSeconds: 0 })).issues[0]?.path).toBe(
      "options.timeoutSeconds",
    );
  });

  it("throws for a missing context (a programmer error)", async () => {
    const tools = new FunctionToolManager({ tools: [add] });
    await expect(tools.call("add", {}, undefined as never)).rejects.toThrow(
      /ctx: must be an ExecContext/,
    );
  });
});
