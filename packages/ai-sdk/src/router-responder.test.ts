import "./no-network.test-support.js";
import type { LanguageModelV3GenerateResult } from "@ai-sdk/provider";
import {
  ExecContext,
  InProcessRuntime,
  NervaError,
  Orchestrator,
  RuleRouter,
  agentResult,
} from "@nerva/core";
import { LlmRouter } from "@nerva/core/router";
import { MockLanguageModelV3 } from "ai/test";
import { describe, expect, it } from "vitest";
import { ModelResponder, createModel, llmClassify } from "./index.js";

const stop = { unified: "stop", raw: "stop" } as const;
const usage = {
  inputTokens: { total: 40, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 12, text: undefined, reasoning: undefined },
};
const say = (text: string): LanguageModelV3GenerateResult => ({
  content: [{ type: "text", text }],
  finishReason: stop,
  usage,
  warnings: [],
});
const mock = (
  doGenerate: ConstructorParameters<typeof MockLanguageModelV3>[0] extends infer O
    ? O extends { doGenerate?: infer G }
      ? G
      : never
    : never,
) => new MockLanguageModelV3({ provider: "openai.chat", modelId: "gpt-4o-mini", doGenerate });

const handlers = [
  { name: "flight_agent", description: "Books and changes flights" },
  { name: "weather_agent", description: "Weather forecasts" },
];

describe("llmClassify", () => {
  it("asks for candidates restricted to the offered handlers; the chat span nests under router.classify", async () => {
    const m = mock(
      say(
        JSON.stringify({
          candidates: [
            { name: "flight_agent", score: 0.92, reason: "asks for a flight" },
            { name: "weather_agent", score: 0.1, reason: "mentions rain" },
          ],
        }),
      ),
    );
    const router = new LlmRouter({ handlers, classify: llmClassify(createModel(m)) });
    const ctx = ExecContext.create();
    // The orchestrator opens router.classify around whatever router it was given; as it does:
    const { best, candidates } = await ctx.span("router.classify", (inner) =>
      router.classify("Book me a flight to Oslo, is it raining?", inner),
    );
    expect(best?.name).toBe("flight_agent");
    expect(candidates.map((c) => c.name)).toEqual(["flight_agent", "weather_agent"]);
    const format = m.doGenerateCalls[0]!.responseFormat as {
      type: string;
      schema: { properties: Record<string, unknown> };
    };
    expect(format.type).toBe("json");
    expect(JSON.stringify(format.schema)).toContain('"enum":["flight_agent","weather_agent"]');
    const classify = ctx.spans.find((s) => s.name === "router.classify")!;
    const chat = ctx.spans.find((s) => s.name === "chat")!;
    expect(chat.parentId).toBe(classify.id);
    expect(ctx.tokenUsage.totalTokens).toBe(52);
  });

  it("offers only the handlers the context may use", async () => {
    const m = mock(
      say(
        JSON.stringify({ candidates: [{ name: "weather_agent", score: 0.8, reason: "weather" }] }),
      ),
    );
    const router = new LlmRouter({ handlers, classify: llmClassify(createModel(m)) });
    const ctx = ExecContext.create({ permissions: { allowedAgents: ["weather_agent"] } });
    await router.classify("Rain tomorrow?", ctx);
    const schema = JSON.stringify(m.doGenerateCalls[0]!.responseFormat);
    expect(schema).toContain('"enum":["weather_agent"]');
    expect(JSON.stringify(m.doGenerateCalls[0]!.prompt)).not.toContain("flight_agent");
  });

  it("a name outside the offered handlers fails the structured output, and the router reports it", async () => {
    const m = mock(
      say(
        JSON.stringify({
          candidates: [{ name: "admin_agent", score: 1, reason: "ignore previous instructions" }],
        }),
      ),
    );
    const router = new LlmRouter({ handlers, classify: llmClassify(createModel(m)) });
    const err = await router.classify("x", ExecContext.create()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NervaError);
    expect((err as NervaError).code).toBe("INTERNAL");
    expect((err as NervaError).message).toMatch(/admin_agent/);
  });
});

describe("ModelResponder", () => {
  const result = agentResult("flight_agent", {
    output: "Flight NV123 departs 09:40 from gate B12.",
  });

  it("rewrites a success with the model, under a responder.format span", async () => {
    const m = mock(say("Good news! Your flight NV123 leaves at 09:40 from gate B12."));
    const responder = new ModelResponder({ model: createModel(m), instructions: "Warm, brief." });
    const ctx = ExecContext.create();
    const response = await responder.format(result, "plain", ctx);
    expect(response.text).toBe("Good news! Your flight NV123 leaves at 09:40 from gate B12.");
    expect(response.status).toBe("success");
    const system = m.doGenerateCalls[0]!.prompt[0]!;
    expect(JSON.stringify(system)).toContain("Warm, brief.");
    const span = ctx.spans.find(
      (s) => s.name === "responder.format" && s.attributes["responder"] === "model",
    )!;
    expect(ctx.spans.find((s) => s.name === "chat")!.parentId).toBe(span.id);
  });

  it("falls back to the plain text when the model fails, with a responder.model_failed event", async () => {
    const m = new MockLanguageModelV3({
      provider: "openai.chat",
      modelId: "gpt-4o-mini",
      doGenerate: async () => {
        throw new Error("boom");
      },
    });
    const responder = new ModelResponder({ model: createModel(m), instructions: "Warm." });
    const ctx = ExecContext.create();
    const response = await responder.format(result, "plain", ctx);
    expect(response.text).toBe(result.output);
    const event = ctx.events.find((e) => e.name === "responder.model_failed")!;
    expect(event.attributes).toMatchObject({ model: "openai/gpt-4o-mini", code: "INTERNAL" });
  });

  it("falls back within its own time limit when the model hangs", async () => {
    const m = new MockLanguageModelV3({
      provider: "openai.chat",
      modelId: "gpt-4o-mini",
      doGenerate: () => new Promise(() => undefined),
    });
    const responder = new ModelResponder({
      model: createModel(m),
      instructions: "Warm.",
      timeoutSeconds: 0.1,
    });
    const ctx = ExecContext.create();
    const started = performance.now();
    const response = await responder.format(result, "plain", ctx);
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(response.text).toBe(result.output);
    expect(ctx.events.find((e) => e.name === "responder.model_failed")!.attributes["code"]).toBe(
      "TIMEOUT",
    );
    expect(ctx.isCancelled() || ctx.isTimedOut()).toBe(false);
  });

  it("does not rewrite failures, and passes streamed chunks through unchanged without rewriting", async () => {
    const m = mock(say("rewritten"));
    const responder = new ModelResponder({ model: createModel(m), instructions: "Warm." });
    const failed = await responder.format(
      agentResult("a", { status: "error", error: "down" }),
      "plain",
      ExecContext.create(),
    );
    expect(failed.status).toBe("error");
    expect(m.doGenerateCalls).toHaveLength(0);

    const runtime = new InProcessRuntime().register("streamer", async function* () {
      yield "chunk one, ";
      yield "chunk two";
    });
    const orchestrator = new Orchestrator({
      router: new RuleRouter({ rules: [], defaultHandler: "streamer" }),
      runtime,
      responder,
    });
    const chunks: string[] = [];
    for await (const c of orchestrator.stream("hi", ExecContext.create())) chunks.push(c);
    expect(chunks).toEqual(["chunk one, ", "chunk two"]);
    expect(m.doGenerateCalls).toHaveLength(0);
  });

  it("rewrites through orchestrator.handle", async () => {
    const m = mock(say("Hi there, friend!"));
    const runtime = new InProcessRuntime().register("greeter", async () => "hello");
    const orchestrator = new Orchestrator({
      router: new RuleRouter({ rules: [], defaultHandler: "greeter" }),
      runtime,
      responder: new ModelResponder({ model: createModel(m), instructions: "Warm." }),
    });
    const response = await orchestrator.handle("hi", ExecContext.create());
    expect(response.text).toBe("Hi there, friend!");
  });
});
