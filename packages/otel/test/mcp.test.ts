// A tool served by an MCP server is an `extension` tool on the server it reached.
import { fileURLToPath } from "node:url";
import { SpanKind } from "@opentelemetry/api";
import { afterAll, describe, expect, it } from "vitest";
import { ExecContext, InProcessRuntime, Orchestrator, RuleRouter } from "@nerva/core";
import { McpToolManager } from "@nerva/core/mcp";
import { createOtelSink } from "../src/index.js";
import { memoryExport, one } from "./world.test-support.js";

const SERVER = fileURLToPath(new URL("./fixtures/mcp-server.mjs", import.meta.url));
const tools = await McpToolManager.connect({
  command: process.execPath,
  args: [SERVER],
  name: "calculator",
});
afterAll(() => tools.close());

describe("an MCP tool call", () => {
  it("exports execute_tool with gen_ai.tool.type extension and the server, over a client mcp.call", async () => {
    const { exporter, processor } = memoryExport();
    const runtime = new InProcessRuntime();
    const orchestrator = new Orchestrator({
      router: new RuleRouter({ rules: [], defaultHandler: "math" }),
      runtime,
      tools,
    });
    runtime.register(
      "math",
      orchestrator.handler(async (_input, _ctx, kit) => {
        const r = await kit.tools.call("add", { a: 2, b: 3 });
        return JSON.stringify(r.output);
      }),
    );
    const ctx = ExecContext.create({ traceSink: createOtelSink({ spanProcessors: [processor] }) });
    const response = await orchestrator.handle("2 + 3", ctx);
    expect(response.status).toBe("success");
    const spans = exporter.getFinishedSpans();
    const tool = one(spans, "execute_tool add");
    expect(tool.attributes).toMatchObject({
      "gen_ai.tool.name": "add",
      "gen_ai.tool.type": "extension",
      "server.address": "calculator",
    });
    const call = one(spans, "mcp.call");
    expect(call.kind).toBe(SpanKind.CLIENT);
    expect(call.parentSpanContext?.spanId).toBe(tool.spanContext().spanId);
    expect(call.attributes["server.address"]).toBe("calculator");
  });
});
