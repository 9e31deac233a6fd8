// A model call through @nerva/ai-sdk is a `chat {model}` client span in the agent's tree, and
// the provider's HTTP request (an instrumented fetch here) nests under that chat span: one tree
// from the workflow down to the wire.
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { SpanKind } from "@opentelemetry/api";
import { afterAll, describe, expect, it } from "vitest";
import { ExecContext, InProcessRuntime, Orchestrator, RuleRouter } from "@nerva/core";
import { createModel, modelAgent, PriceTable } from "@nerva/ai-sdk";
import { FakeOpenAIServer } from "@nerva/ai-sdk/testing";
import { createOtelSink } from "../src/index.js";
import { appTracer, registerAppTracing } from "./otel-app.test-support.js";
import { memoryExport, one } from "./world.test-support.js";

const { exporter, processor } = memoryExport();
const unregister = registerAppTracing(processor);
const upstream = await FakeOpenAIServer.start();
afterAll(async () => {
  await upstream.close();
  await unregister();
});

/** fetch as an HTTP client instrumentation sees it: a client span around each request. */
const tracedFetch: typeof fetch = (input, init) =>
  appTracer().startActiveSpan("POST", { kind: SpanKind.CLIENT }, async (span) => {
    try {
      return await fetch(input, init);
    } finally {
      span.end();
    }
  });

describe("@nerva/ai-sdk under an OTel sink", () => {
  it("exports a chat span under invoke_agent, with the provider's HTTP call under it", async () => {
    const model = createModel(
      createOpenAICompatible({
        name: "fake",
        baseURL: upstream.url,
        includeUsage: true,
        fetch: tracedFetch,
      }).chatModel("gpt-4o-mini"),
      { prices: new PriceTable({ "fake/gpt-4o-mini": { input: 0.15, output: 0.6 } }) },
    );
    const runtime = new InProcessRuntime();
    const orchestrator = new Orchestrator({
      router: new RuleRouter({ rules: [], defaultHandler: "concierge" }),
      runtime,
    });
    runtime.register("concierge", orchestrator.handler(modelAgent({ model, tools: false })));
    upstream.enqueue({
      text: "Fjords are deep.",
      usage: { promptTokens: 50, completionTokens: 6 },
    });

    const ctx = ExecContext.create({ traceSink: createOtelSink({ spanProcessors: [processor] }) });
    const response = await orchestrator.handle("Tell me about fjords", ctx);
    expect(response.text).toBe("Fjords are deep.");

    const spans = exporter.getFinishedSpans();
    const workflow = one(spans, "invoke_workflow nerva");
    const agent = one(spans, "invoke_agent concierge");
    const chat = one(spans, "chat gpt-4o-mini");
    const http = one(spans, "POST");
    expect(new Set(spans.map((s) => s.spanContext().traceId))).toEqual(new Set([ctx.traceId]));
    expect(agent.parentSpanContext?.spanId).toBe(workflow.spanContext().spanId);
    expect(chat.parentSpanContext?.spanId).toBe(agent.spanContext().spanId);
    expect(http.parentSpanContext?.spanId).toBe(chat.spanContext().spanId);
    expect(chat.kind).toBe(SpanKind.CLIENT);
    expect(chat.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "fake",
      "gen_ai.request.model": "gpt-4o-mini",
      "gen_ai.usage.input_tokens": 50,
      "gen_ai.usage.output_tokens": 6,
    });
    expect(chat.attributes["nerva.usage.cost_usd"]).toBeGreaterThan(0);
    // Usage is the chat span's own, counted once: the agent spent none itself.
    expect(agent.attributes).not.toHaveProperty("gen_ai.usage.input_tokens");
    expect(agent.attributes["nerva.usage.total.input_tokens"]).toBe(50);
    expect(workflow.attributes["nerva.usage.total.input_tokens"]).toBe(50);
    expect(workflow.attributes["nerva.usage.total.cost_usd"]).toBe(
      chat.attributes["nerva.usage.cost_usd"],
    );
  });
});
