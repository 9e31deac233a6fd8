import "./no-network.test-support.js";
import type {
  LanguageModelV2,
  LanguageModelV3GenerateResult,
  LanguageModelV3StreamPart,
  LanguageModelV3Usage,
} from "@ai-sdk/provider";
import { ExecContext, InProcessRuntime, NervaError } from "@nerva/core";
import { formatSpanTree } from "@nerva/core/tracing";
import { MockLanguageModelV3, convertArrayToReadableStream } from "ai/test";
import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { PriceTable, createModel, normaliseProvider } from "./index.js";
import { importAi } from "./load-ai.js";

const usage = (
  input: number | undefined,
  output: number | undefined,
  extra: { cacheRead?: number; cacheWrite?: number; reasoning?: number } = {},
): LanguageModelV3Usage => ({
  inputTokens: {
    total: input,
    noCache: undefined,
    cacheRead: extra.cacheRead,
    cacheWrite: extra.cacheWrite,
  },
  outputTokens: { total: output, text: undefined, reasoning: extra.reasoning },
});

const stop = { unified: "stop", raw: "stop" } as const;

function textResult(
  text: string,
  u: LanguageModelV3Usage = usage(10, 5),
): LanguageModelV3GenerateResult {
  return {
    content: [{ type: "text", text }],
    finishReason: stop,
    usage: u,
    warnings: [],
    response: { id: "resp-1", modelId: "gpt-4o-mini-2024-07-18" },
  };
}

function streamOf(deltas: string[], u: LanguageModelV3Usage | null = usage(7, deltas.length)) {
  const parts: LanguageModelV3StreamPart[] = [
    { type: "stream-start", warnings: [] },
    { type: "response-metadata", id: "resp-s", modelId: "gpt-4o-mini" },
    { type: "text-start", id: "t" },
    ...deltas.map((delta): LanguageModelV3StreamPart => ({ type: "text-delta", id: "t", delta })),
    { type: "text-end", id: "t" },
  ];
  if (u !== null) parts.push({ type: "finish", finishReason: stop, usage: u });
  return { stream: convertArrayToReadableStream(parts) };
}

const mock = (options: ConstructorParameters<typeof MockLanguageModelV3>[0] = {}) =>
  new MockLanguageModelV3({ provider: "openai.chat", modelId: "gpt-4o-mini", ...options });

const prices = new PriceTable({
  "openai/gpt-4o-mini": { input: 0.15, output: 0.6, cachedInput: 0.075, cacheWrite: 0.3 },
});

describe("generate", () => {
  it("returns the text and maps V3 usage: cached input, cache writes, reasoning as output", async () => {
    const m = mock({
      doGenerate: textResult(
        "Hi!",
        usage(1000, 300, { cacheRead: 600, cacheWrite: 100, reasoning: 120 }),
      ),
    });
    const ctx = ExecContext.create();
    const {
      text,
      usage: u,
      steps,
      finishReason,
    } = await createModel(m, { prices }).generate({ prompt: "Hello" }, ctx);
    expect(text).toBe("Hi!");
    expect(steps).toHaveLength(1);
    expect(finishReason).toBe("stop");
    expect(u).toEqual({
      inputTokens: 1000,
      outputTokens: 300,
      totalTokens: 1300,
      cachedInputTokens: 600,
      cacheWriteTokens: 100,
      reasoningTokens: 120,
      costUsd: (300 * 0.15 + 600 * 0.075 + 100 * 0.3 + 300 * 0.6) / 1e6,
      estimated: false,
    });
    expect(ctx.tokenUsage).toEqual({
      promptTokens: 1000,
      completionTokens: 300,
      totalTokens: 1300,
      costUsd: u.costUsd,
    });
    const span = ctx.spans[0]!;
    expect(span.name).toBe("chat");
    expect(span.attributes).toMatchObject({
      "nerva.span.kind": "client",
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "openai",
      "gen_ai.request.model": "gpt-4o-mini",
      "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
      "gen_ai.response.id": "resp-1",
      "gen_ai.usage.input_tokens": 1000,
      "gen_ai.usage.output_tokens": 300,
      "gen_ai.usage.cache_read.input_tokens": 600,
      "gen_ai.usage.cache_creation.input_tokens": 100,
      "gen_ai.usage.reasoning.output_tokens": 120,
      "nerva.cost_usd": u.costUsd,
    });
    expect(span.attributes["gen_ai.input.messages"]).toBeUndefined();
  });

  it("passes request parameters to the provider and onto the span; the SDK's retries are off", async () => {
    const m = mock({ doGenerate: textResult("ok") });
    const ctx = ExecContext.create();
    await createModel(m).generate(
      {
        system: "Be brief.",
        prompt: "x",
        temperature: 0.2,
        maxOutputTokens: 50,
        topP: 0.9,
        seed: 7,
        stopSequences: ["END"],
      },
      ctx,
    );
    const call = m.doGenerateCalls[0]!;
    expect(call).toMatchObject({
      temperature: 0.2,
      maxOutputTokens: 50,
      topP: 0.9,
      seed: 7,
      stopSequences: ["END"],
    });
    expect(call.prompt[0]).toEqual({ role: "system", content: "Be brief." });
    expect(ctx.spans[0]!.attributes).toMatchObject({
      "gen_ai.request.temperature": 0.2,
      "gen_ai.request.max_tokens": 50,
      "gen_ai.request.top_p": 0.9,
      "gen_ai.request.seed": 7,
      "gen_ai.request.stop_sequences": '["END"]',
    });
  });

  it("records prompts and outputs on the span only with recordContent", async () => {
    const ctx = ExecContext.create();
    await createModel(mock({ doGenerate: textResult("secret answer") }), {
      recordContent: true,
    }).generate(
      {
        prompt: "secret question",
      },
      ctx,
    );
    expect(String(ctx.spans[0]!.attributes["gen_ai.input.messages"])).toContain("secret question");
    expect(String(ctx.spans[0]!.attributes["gen_ai.output.messages"])).toContain("secret answer");
  });

  it("estimates usage (characters / 4) when the provider reports none", async () => {
    const ctx = ExecContext.create();
    const { usage: u } = await createModel(
      mock({ doGenerate: textResult("12345678", usage(undefined, undefined)) }),
    ).generate({ prompt: "abcdefghijkl" }, ctx);
    expect(u).toMatchObject({ inputTokens: 3, outputTokens: 2, estimated: true });
    expect(ctx.spans[0]!.attributes["nerva.usage.estimated"]).toBe(true);
    expect(ctx.tokenUsage.totalTokens).toBe(5);
  });

  it("nests the chat span under the handler's runtime.invoke span", async () => {
    const model = createModel(mock({ doGenerate: textResult("hello") }));
    const runtime = new InProcessRuntime().register(
      "agent",
      async (input, ctx) => (await model.generate({ prompt: input.message }, ctx)).text,
    );
    const ctx = ExecContext.create();
    const result = await runtime.invoke("agent", { message: "hi" }, ctx);
    expect(result.output).toBe("hello");
    const invoke = ctx.spans.find((s) => s.name === "runtime.invoke")!;
    const chat = ctx.spans.find((s) => s.name === "chat")!;
    expect(chat.parentId).toBe(invoke.id);
    expect(chat.kind).toBe("client");
    expect(formatSpanTree(ctx.spans)).toMatch(/^runtime\.invoke agent .*\n└─ chat /);
    // The tokens are the chat span's own usage; the handler's span has them in its total only.
    expect(chat.usage).toMatchObject({ promptTokens: 10, completionTokens: 5, totalTokens: 15 });
    expect(invoke.usage.totalTokens).toBe(0);
    expect(invoke.totalUsage.totalTokens).toBe(15);
    expect(ctx.tokenUsage.totalTokens).toBe(15);
  });

  it("names the specification version and the provider packages that fit, for a model of another version", () => {
    const v1 = {
      specificationVersion: "v1",
      provider: "openai.chat",
      modelId: "gpt-4o-mini",
      doGenerate: async () => ({}),
      doStream: async () => ({}),
    };
    const err = (() => {
      try {
        createModel(v1 as never);
      } catch (e) {
        return e as NervaError;
      }
      throw new Error("expected a throw");
    })();
    expect(err.code).toBe("INVALID_OPTIONS");
    expect(err.message).toContain('specificationVersion "v1"');
    expect(err.message).toContain('provider "openai.chat"');
    expect(err.message).toMatch(/@ai-sdk\/openai@3/);
  });

  it("accepts a V2 model through the SDK's compatibility adapter", async () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    const v2: LanguageModelV2 = {
      specificationVersion: "v2",
      provider: "legacy.chat",
      modelId: "old-1",
      supportedUrls: {},
      doGenerate: async () => ({
        content: [{ type: "text", text: "from v2" }],
        finishReason: "stop",
        usage: { inputTokens: 4, outputTokens: 2, totalTokens: 6, cachedInputTokens: 1 },
        warnings: [],
      }),
      doStream: async () => {
        throw new Error("unused");
      },
    };
    const ctx = ExecContext.create();
    const { text, usage: u } = await createModel(v2).generate({ prompt: "x" }, ctx);
    expect(text).toBe("from v2");
    expect(u).toMatchObject({ inputTokens: 4, outputTokens: 2, cachedInputTokens: 1 });
    expect(ctx.spans[0]!.attributes["gen_ai.provider.name"]).toBe("legacy");
    warn.mockRestore();
  });
});

describe("stream", () => {
  it("pushes the deltas to ctx.stream in order, awaiting the sink's backpressure", async () => {
    const deltas = ["The ", "quick ", "brown ", "fox"];
    const got: string[] = [];
    let inFlight = 0;
    let maxInFlight = 0;
    const ctx = ExecContext.create({
      stream: {
        push: async (c) => {
          inFlight++;
          maxInFlight = Math.max(maxInFlight, inFlight);
          await new Promise((r) => setTimeout(r, 5));
          got.push(c);
          inFlight--;
        },
      },
    });
    const { text } = await createModel(mock({ doStream: streamOf(deltas) })).stream(
      {
        prompt: "x",
      },
      ctx,
    );
    expect(got).toEqual(deltas);
    expect(maxInFlight).toBe(1);
    expect(text).toBe("The quick brown fox");
  });

  it("does not push reasoning unless asked", async () => {
    const parts: LanguageModelV3StreamPart[] = [
      { type: "reasoning-start", id: "r" },
      { type: "reasoning-delta", id: "r", delta: "thinking…" },
      { type: "reasoning-end", id: "r" },
      { type: "text-start", id: "t" },
      { type: "text-delta", id: "t", delta: "answer" },
      { type: "text-end", id: "t" },
      { type: "finish", finishReason: stop, usage: usage(1, 2, { reasoning: 1 }) },
    ];
    const run = async (reasoning: boolean) => {
      const got: string[] = [];
      const ctx = ExecContext.create({ stream: { push: (c) => void got.push(c) } });
      await createModel(mock({ doStream: { stream: convertArrayToReadableStream(parts) } })).stream(
        {
          prompt: "x",
          reasoning,
        },
        ctx,
      );
      return got;
    };
    expect(await run(false)).toEqual(["answer"]);
    expect(await run(true)).toEqual(["thinking…", "answer"]);

    // A sink that keeps reasoning apart gets it through pushReasoning, the answer through push.
    const got: string[] = [];
    const ctx = ExecContext.create({
      stream: {
        push: (c) => void got.push(`text:${c}`),
        pushReasoning: (c) => void got.push(`reasoning:${c}`),
      },
    });
    await createModel(mock({ doStream: { stream: convertArrayToReadableStream(parts) } })).stream(
      { prompt: "x", reasoning: true },
      ctx,
    );
    expect(got).toEqual(["reasoning:thinking…", "text:answer"]);
  });
});

describe("structured output", () => {
  const City = z.object({ city: z.string(), country: z.string() });

  it("returns the parsed object", async () => {
    const m = mock({ doGenerate: textResult('{"city":"Oslo","country":"Norway"}') });
    const { object } = await createModel(m).generate(
      {
        prompt: "Capital of Norway?",
        output: City,
      },
      ExecContext.create(),
    );
    expect(object).toEqual({ city: "Oslo", country: "Norway" });
    expect(m.doGenerateCalls[0]!.responseFormat).toMatchObject({ type: "json" });
  });

  it("invalid output is INTERNAL with a preview of the text", async () => {
    const m = mock({ doGenerate: textResult('{"city":42}') });
    const err = await createModel(m)
      .generate({ prompt: "x", output: City }, ExecContext.create())
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NervaError);
    expect((err as NervaError).code).toBe("INTERNAL");
    expect((err as NervaError).message).toContain('{"city":42}');
    expect((err as NervaError).message).toContain("openai/gpt-4o-mini");
  });
});

describe("prices", () => {
  it("prices input, cached input, cache writes and output per 1M tokens", () => {
    const table = new PriceTable({
      "anthropic/claude": { input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75 },
    });
    expect(
      table.cost("anthropic/claude", {
        inputTokens: 10_000,
        cachedInputTokens: 6_000,
        cacheWriteTokens: 2_000,
        outputTokens: 1_000,
      }),
    ).toBeCloseTo((2_000 * 3 + 6_000 * 0.3 + 2_000 * 3.75 + 1_000 * 15) / 1e6, 12);
    expect(
      new PriceTable({ "a/b": { input: 2, output: 4 } }).cost("a/b", {
        inputTokens: 10,
        cachedInputTokens: 5,
        outputTokens: 1,
      }),
    ).toBeCloseTo((10 * 2 + 4) / 1e6, 12);
  });

  it("an unknown model costs 0, is flagged on the span and reported once per request", async () => {
    const model = createModel(mock({ doGenerate: textResult("x") }), {
      prices: new PriceTable({ "openai/other": { input: 1, output: 1 } }),
    });
    const ctx = ExecContext.create();
    await model.generate({ prompt: "a" }, ctx);
    await model.generate({ prompt: "b" }, ctx);
    expect(ctx.tokenUsage.costUsd).toBe(0);
    expect(ctx.spans.every((s) => s.attributes["nerva.cost_unknown"] === true)).toBe(true);
    expect(
      ctx.events.filter((e) => e.name === "llm.price_unknown").map((e) => e.attributes["model"]),
    ).toEqual(["openai/gpt-4o-mini"]);
  });

  it('unknownPrice: "throw" refuses a model without a price', () => {
    expect(() =>
      createModel(mock(), { prices: new PriceTable({}), unknownPrice: "throw" }),
    ).toThrow(/no price for "openai\/gpt-4o-mini"/);
    expect(() => createModel(mock(), { prices, unknownPrice: "throw" })).not.toThrow();
  });

  it("rejects bad tables and unknown lookups with the field and the fix", () => {
    expect(() => new PriceTable({ "gpt-4o": { input: 1, output: 1 } })).toThrow(/provider\/model/);
    expect(() => new PriceTable({ "a/b": { input: -1, output: 1 } })).toThrow(
      /prices\.a\/b\.input/,
    );
    expect(() => prices.cost("x/y", { inputTokens: 1, outputTokens: 1 })).toThrow(
      /no price for "x\/y"/,
    );
  });
});

describe("options and models", () => {
  it("normalises provider names", () => {
    expect(normaliseProvider("openai.chat")).toBe("openai");
    expect(normaliseProvider("anthropic.messages")).toBe("anthropic");
    expect(normaliseProvider("mistral")).toBe("mistral");
  });

  it("refuses what is not a model, bad options and bad call options", async () => {
    expect(() => createModel({} as never)).toThrow(/LanguageModel/);
    expect(() => createModel(mock(), { retry: { maxAttempts: 0 } })).toThrow(
      /options\.retry\.maxAttempts/,
    );
    expect(() => createModel(mock(), { retry: { maxRetries: 2 } as never })).toThrow(
      /options\.retry.*maxRetries/,
    );
    expect(() => createModel(mock(), { nope: 1 } as never)).toThrow(/INVALID|Unrecognized|options/);
    const model = createModel(mock({ doGenerate: textResult("x") }));
    await expect(model.generate({} as never, ExecContext.create())).rejects.toThrow(
      /prompt or messages/,
    );
    await expect(model.generate({ prompt: "x" }, {} as never)).rejects.toThrow(/ExecContext/);
    const ctx = ExecContext.create();
    await expect(model.stream(ctx as never, { prompt: "x" } as never)).rejects.toThrow(
      /context goes last.*model\.stream\(call, ctx\)/,
    );
  });

  it("a context cancelled before the call fails CANCELLED without calling the provider", async () => {
    const m = mock({ doGenerate: textResult("x") });
    const ctx = ExecContext.create();
    ctx.cancel("gone");
    await expect(createModel(m).generate({ prompt: "x" }, ctx)).rejects.toMatchObject({
      code: "CANCELLED",
    });
    expect(m.doGenerateCalls).toHaveLength(0);
  });

  it("a missing `ai` package is MISSING_DEPENDENCY naming it", async () => {
    const missing = Object.assign(new Error("Cannot find package 'ai' imported from /app/x.js"), {
      code: "ERR_MODULE_NOT_FOUND",
    });
    const err = await importAi(() => Promise.reject(missing)).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "MISSING_DEPENDENCY", details: { package: "ai" } });
    expect((err as Error).message).toContain("npm install ai@^6");
  });
});
