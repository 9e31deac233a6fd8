// modelAgent and toolsFor through a real orchestrator: tools from FunctionToolManager and a real
// MCP server (stdio), the policy before each tool call and each model step, spans and streaming.
import "./no-network.test-support.js";
import { fileURLToPath } from "node:url";
import type {
  LanguageModelV3CallOptions,
  LanguageModelV3GenerateResult,
  LanguageModelV3Prompt,
} from "@ai-sdk/provider";
import { CompositeToolManager } from "@nerva/core/tools";
import { DeclarativePolicyEngine } from "@nerva/core/policy";
import {
  ExecContext,
  FunctionToolManager,
  InProcessRuntime,
  Orchestrator,
  RuleRouter,
  defineTool,
  type ToolManager,
} from "@nerva/core";
import { McpToolManager } from "@nerva/core/mcp";
import { MockLanguageModelV3 } from "ai/test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createModel, modelAgent, providerNames, toolsFor } from "./index.js";

const stop = { unified: "stop", raw: "stop" } as const;
const toolCalls = { unified: "tool-calls", raw: "tool_calls" } as const;
const u = (input: number, output: number) => ({
  inputTokens: { total: input, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: undefined, reasoning: undefined },
});

function callTool(
  name: string,
  input: unknown,
  id = "call_1",
  usage = u(20, 10),
): LanguageModelV3GenerateResult {
  return {
    content: [{ type: "tool-call", toolCallId: id, toolName: name, input: JSON.stringify(input) }],
    finishReason: toolCalls,
    usage,
    warnings: [],
  };
}
function say(text: string, usage = u(30, 5)): LanguageModelV3GenerateResult {
  return { content: [{ type: "text", text }], finishReason: stop, usage, warnings: [] };
}

/** The tool results the model was shown in `prompt`. */
function toolResults(
  prompt: LanguageModelV3Prompt,
): { name: string; id: string; value: unknown }[] {
  const out: { name: string; id: string; value: unknown }[] = [];
  for (const m of prompt) {
    if (m.role !== "tool") continue;
    for (const p of m.content) {
      if (p.type === "tool-result")
        out.push({
          name: p.toolName,
          id: p.toolCallId,
          value: (p.output as { value: unknown }).value,
        });
    }
  }
  return out;
}

const searchFlights = defineTool({
  name: "search_flights",
  description: "Finds flights to a city",
  parameters: z.object({ to: z.string() }),
  run: ({ to }) => [{ flight: "NV123", to, price: 99 }],
});
const refund = defineTool({
  name: "issue_refund",
  description: "Refunds a booking",
  parameters: z.object({ booking: z.string() }),
  run: () => "refunded",
});

function setup(options: {
  tools?: ToolManager;
  policy?: DeclarativePolicyEngine;
  model: MockLanguageModelV3;
  maxSteps?: number;
}) {
  const runtime = new InProcessRuntime();
  const orchestrator = new Orchestrator({
    router: new RuleRouter({ rules: [], defaultHandler: "concierge" }),
    runtime,
    tools: options.tools ?? new FunctionToolManager({ tools: [searchFlights, refund] }),
    ...(options.policy === undefined ? {} : { policy: options.policy }),
  });
  const model = createModel(options.model);
  runtime.register(
    "concierge",
    orchestrator.handler(
      modelAgent({ model, system: "You are a concierge.", maxSteps: options.maxSteps ?? 5 }),
    ),
  );
  return { orchestrator, model };
}

describe("modelAgent", () => {
  it("runs the tool loop through the kit and answers with the final text", async () => {
    const mock = new MockLanguageModelV3({
      provider: "openai.chat",
      modelId: "gpt-4o-mini",
      doGenerate: [
        callTool("search_flights", { to: "OSL" }, "call_abc"),
        say("NV123 to Oslo costs 99."),
      ],
    });
    const { orchestrator } = setup({ model: mock });
    const ctx = ExecContext.create();
    const response = await orchestrator.handle("Find me a flight to Oslo", ctx);
    expect(response).toMatchObject({
      status: "success",
      handler: "concierge",
      text: "NV123 to Oslo costs 99.",
    });
    expect(mock.doGenerateCalls).toHaveLength(2);
    const first = mock.doGenerateCalls[0]! as LanguageModelV3CallOptions;
    expect(first.tools?.map((t) => t.name).sort()).toEqual(["issue_refund", "search_flights"]);
    expect(first.prompt[0]).toEqual({ role: "system", content: "You are a concierge." });
    expect(toolResults(mock.doGenerateCalls[1]!.prompt)).toEqual([
      {
        name: "search_flights",
        id: "call_abc",
        value: [{ flight: "NV123", to: "OSL", price: 99 }],
      },
    ]);
    // Spans: both chat spans and the tool call under the handler's runtime.invoke.
    const invoke = ctx.spans.find((s) => s.name === "runtime.invoke")!;
    const chats = ctx.spans.filter((s) => s.name === "chat");
    const tool = ctx.spans.find((s) => s.name === "tools.call")!;
    expect(chats.map((s) => s.parentId)).toEqual([invoke.id, invoke.id]);
    expect(tool.parentId).toBe(invoke.id);
    expect(tool.attributes["gen_ai.tool.call.id"]).toBe("call_abc");
    expect(ctx.tokenUsage).toMatchObject({ promptTokens: 50, completionTokens: 15 });
    // The policy was asked before each model step.
    const steps = ctx.events.filter(
      (e) => e.name === "policy.decision" && e.attributes["kind"] === "model",
    );
    expect(steps).toHaveLength(0); // no policy configured: nothing recorded
  });

  it("answers a policy-denied tool to the model as { status, error } and goes on", async () => {
    const mock = new MockLanguageModelV3({
      provider: "openai.chat",
      modelId: "gpt-4o-mini",
      doGenerate: [
        callTool("issue_refund", { booking: "B1" }),
        say("I cannot refund that myself."),
      ],
    });
    const policy = new DeclarativePolicyEngine({
      version: 1,
      default: "allow",
      rules: [
        {
          name: "no-refunds",
          effect: "deny",
          kind: "tool",
          names: ["issue_refund"],
          reason: "Only staff may refund.",
        },
      ],
    });
    const { orchestrator } = setup({ model: mock, policy });
    const response = await orchestrator.handle("Refund B1", ExecContext.create({ userId: "u1" }));
    expect(response.text).toBe("I cannot refund that myself.");
    const [result] = toolResults(mock.doGenerateCalls[1]!.prompt);
    expect(result!.value).toEqual({
      status: "permission_denied",
      error: "POLICY_DENIED: Only staff may refund.",
    });
  });

  it("an unknown or failing tool is answered, never thrown", async () => {
    const broken = defineTool({
      name: "broken",
      description: "Always fails",
      parameters: z.object({}),
      run: () => {
        throw new Error("backend down");
      },
    });
    const manager = new FunctionToolManager({ tools: [broken] });
    const ctx = ExecContext.create();
    const tools = await toolsFor(manager, ctx);
    const execute = tools["broken"]!.execute!;
    const answer = await execute({}, { toolCallId: "c1", messages: [] });
    expect(answer).toEqual({ status: "error", error: 'Tool "broken" failed: backend down' });
  });

  it("a budget exhausted by the first step stops the loop before the second call", async () => {
    const mock = new MockLanguageModelV3({
      provider: "openai.chat",
      modelId: "gpt-4o-mini",
      doGenerate: [
        callTool("search_flights", { to: "OSL" }, "c1", u(900, 200)),
        say("never reached"),
      ],
    });
    const policy = new DeclarativePolicyEngine({
      version: 1,
      default: "allow",
      budgets: [{ name: "per-request", per: "request", maxTokens: 1000 }],
    });
    const { orchestrator } = setup({ model: mock, policy });
    const ctx = ExecContext.create({ userId: "u1" });
    await expect(orchestrator.handle("Find me a flight", ctx)).rejects.toMatchObject({
      code: "BUDGET_EXCEEDED",
    });
    expect(mock.doGenerateCalls).toHaveLength(1);
    const asked = ctx.events.filter(
      (e) => e.name === "policy.decision" && e.attributes["kind"] === "model",
    );
    expect(asked.map((e) => e.attributes["effect"])).toEqual(["allow", "deny"]);
    expect(asked[0]!.attributes["name"]).toBe("openai/gpt-4o-mini");
  });

  it("streams the answer into orchestrator.stream when the request streams", async () => {
    const mock = new MockLanguageModelV3({
      provider: "openai.chat",
      modelId: "gpt-4o-mini",
      doStream: {
        stream: new ReadableStream({
          start(c) {
            c.enqueue({ type: "text-start", id: "t" });
            for (const delta of ["Hello ", "from ", "the ", "model"])
              c.enqueue({ type: "text-delta", id: "t", delta });
            c.enqueue({ type: "text-end", id: "t" });
            c.enqueue({ type: "finish", finishReason: stop, usage: u(5, 4) });
            c.close();
          },
        }),
      },
    });
    const { orchestrator } = setup({ model: mock });
    const chunks: string[] = [];
    const stream = orchestrator.stream("hi", ExecContext.create());
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks).toEqual(["Hello ", "from ", "the ", "model"]);
    expect((await stream.response).text).toBe("Hello from the model");
  });
});

describe("tools from an MCP server", () => {
  let mcp: McpToolManager;
  beforeAll(async () => {
    mcp = await McpToolManager.connect({
      command: process.execPath,
      args: [fileURLToPath(new URL("./fixtures/mcp-server.mjs", import.meta.url))],
      name: "test-mcp",
      toolPrefix: "mcp.",
    });
  });
  afterAll(async () => {
    await mcp.close();
  });

  it("maps dotted MCP names to provider-safe ones and back, through the kit", async () => {
    const mock = new MockLanguageModelV3({
      provider: "openai.chat",
      modelId: "gpt-4o-mini",
      doGenerate: [callTool("mcp_add", { a: 2, b: 40 }, "call_mcp"), say("2 + 40 = 42")],
    });
    const tools = new CompositeToolManager([
      new FunctionToolManager({ tools: [searchFlights] }),
      mcp,
    ]);
    const { orchestrator } = setup({ model: mock, tools });
    const ctx = ExecContext.create();
    const response = await orchestrator.handle("What is 2 + 40?", ctx);
    expect(response.text).toBe("2 + 40 = 42");
    const offered = (mock.doGenerateCalls[0]!.tools ?? []).map((t) => t.name).sort();
    expect(offered).toEqual(["mcp_add", "mcp_flight_status", "search_flights"]);
    expect(toolResults(mock.doGenerateCalls[1]!.prompt)).toEqual([
      { name: "mcp_add", id: "call_mcp", value: "42" },
    ]);
    const span = ctx.spans.find(
      (s) => s.name === "tools.call" && s.attributes["tool"] === "mcp.add",
    )!;
    expect(span.attributes["gen_ai.tool.call.id"]).toBe("call_mcp");
  });

  it("offers only the tools the context may use", async () => {
    const ctx = ExecContext.create({ permissions: { allowedTools: ["mcp.flight_status"] } });
    expect(Object.keys(await toolsFor(mcp, ctx))).toEqual(["mcp_flight_status"]);
  });
});

describe("providerNames", () => {
  it("keeps valid names and maps the rest one to one, within 64 characters", () => {
    const long = `x.${"y".repeat(80)}`;
    const names = ["fs.read_file", "fs_read_file", "a b", "ok-name", long, `${long}z`];
    const { toProvider, fromProvider } = providerNames(names);
    expect(toProvider.get("fs_read_file")).toBe("fs_read_file");
    expect(toProvider.get("fs.read_file")).toBe("fs_read_file_2");
    expect(toProvider.get("a b")).toBe("a_b");
    const mapped = names.map((n) => toProvider.get(n)!);
    expect(new Set(mapped).size).toBe(names.length);
    for (const m of mapped) expect(m).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
    for (const n of names) expect(fromProvider.get(toProvider.get(n)!)).toBe(n);
  });
});
