// The adapter against a real HTTP server speaking the OpenAI Chat Completions API on 127.0.0.1,
// through the real providers (@ai-sdk/openai-compatible and @ai-sdk/openai's .chat()).
import "./no-network.test-support.js";
import { getEventListeners } from "node:events";
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { ExecContext, NervaError, isNervaError } from "@nerva/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PriceTable, createModel } from "./index.js";
import { FakeOpenAIServer } from "./testing/index.js";

let server: FakeOpenAIServer;
beforeAll(async () => {
  server = await FakeOpenAIServer.start();
});
afterAll(async () => {
  await server.close();
});

const prices = new PriceTable({
  "fake/gpt-4o-mini": { input: 0.15, output: 0.6, cachedInput: 0.075 },
  "openai/gpt-4o-mini": { input: 0.15, output: 0.6, cachedInput: 0.075 },
});
const compatible = () =>
  createOpenAICompatible({
    name: "fake",
    baseURL: server.url,
    apiKey: "sk-test-key-123456789",
    includeUsage: true,
  }).chatModel("gpt-4o-mini");
const openaiChat = () =>
  createOpenAI({ baseURL: server.url, apiKey: "sk-test-key-123456789" }).chat("gpt-4o-mini");

function collector() {
  const chunks: string[] = [];
  return { chunks, sink: { push: (c: string) => void chunks.push(c) } };
}

async function rejection(p: Promise<unknown>): Promise<NervaError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(NervaError);
    return err as NervaError;
  }
  throw new Error("expected a rejection");
}

describe.each([
  ["@ai-sdk/openai-compatible", compatible, "fake"],
  ["@ai-sdk/openai .chat()", openaiChat, "openai"],
])("through %s", (_name, make, provider) => {
  it("generates text and charges the reported usage at the table's price", async () => {
    server.enqueue({
      text: "Oslo is in Norway.",
      usage: { promptTokens: 1000, completionTokens: 200, cachedTokens: 400 },
    });
    const model = createModel(make(), { prices });
    const ctx = ExecContext.create();
    const { text, usage } = await model.generate({ prompt: "Where is Oslo?" }, ctx);
    expect(text).toBe("Oslo is in Norway.");
    expect(usage).toMatchObject({
      inputTokens: 1000,
      outputTokens: 200,
      cachedInputTokens: 400,
      estimated: false,
    });
    const cost = (600 * 0.15 + 400 * 0.075 + 200 * 0.6) / 1e6;
    expect(usage.costUsd).toBeCloseTo(cost, 12);
    expect(ctx.tokenUsage).toEqual({
      promptTokens: 1000,
      completionTokens: 200,
      totalTokens: 1200,
      costUsd: usage.costUsd,
    });
    const chat = ctx.spans.find((s) => s.name === "chat")!;
    expect(chat.attributes).toMatchObject({
      "gen_ai.provider.name": provider,
      "gen_ai.request.model": "gpt-4o-mini",
      "gen_ai.response.model": "gpt-4o-mini",
      "gen_ai.response.id": "chatcmpl-fake",
      "gen_ai.response.finish_reasons": "stop",
      "gen_ai.request.stream": false,
      "gen_ai.usage.cache_read.input_tokens": 400,
    });
    expect(server.requests.at(-1)!.body["stream"]).not.toBe(true);
  });

  it("charges the usage to the chat span that spent it; it rolls up to the caller's span", async () => {
    server.enqueue({
      text: "Oslo.",
      usage: { promptTokens: 100, completionTokens: 20, cachedTokens: 40 },
    });
    const model = createModel(make(), { prices });
    const ctx = ExecContext.create();
    await ctx.span("agent", (inner) => model.generate({ prompt: "Where is Oslo?" }, inner));
    const chat = ctx.spans.find((s) => s.name === "chat")!;
    const agent = ctx.spans.find((s) => s.name === "agent")!;
    expect(chat.usage).toMatchObject({
      promptTokens: 100,
      completionTokens: 20,
      cachedInputTokens: 40,
    });
    expect(chat.usage.costUsd).toBeGreaterThan(0);
    expect(agent.usage.totalTokens).toBe(0);
    expect(agent.totalUsage).toEqual(chat.usage);
    expect(ctx.tokenUsage.promptTokens).toBe(100);
  });

  it("streams the chunks into ctx.stream as the server sent them", async () => {
    const chunks = ["Once ", "upon ", "a ", "time, ", "there ", "was ", "a ", "fjord."];
    server.enqueue({ chunks, usage: { promptTokens: 12, completionTokens: 8 } });
    const { chunks: got, sink } = collector();
    const ctx = ExecContext.create({ stream: sink });
    const { text, usage } = await createModel(make(), { prices }).stream(
      {
        prompt: "A story",
      },
      ctx,
    );
    expect(got).toEqual(chunks);
    expect(text).toBe(chunks.join(""));
    expect(usage).toMatchObject({ inputTokens: 12, outputTokens: 8, estimated: false });
    expect(server.requests.at(-1)!.includeUsage).toBe(true);
    const chat = ctx.spans.find((s) => s.name === "chat")!;
    expect(chat.attributes["gen_ai.request.stream"]).toBe(true);
    expect(chat.attributes["gen_ai.response.time_to_first_chunk"]).toBeGreaterThan(0);
    expect(getEventListeners(ctx.signal, "abort")).toHaveLength(0); // nothing left behind
  });

  it("cancel mid-stream: the server sees the socket close and the call settles, each within 100 ms, with the estimate charged", async () => {
    server.enqueue({ text: "word ".repeat(200), chunkDelaySeconds: 0.02 });
    const { chunks, sink } = collector();
    let cancelledAt = 0;
    const ctx = ExecContext.create({
      stream: {
        push: (c) => {
          sink.push(c);
          if (chunks.length === 5) {
            cancelledAt = performance.now();
            ctx.cancel("the user left");
          }
        },
      },
    });
    const arrived = server.nextRequest();
    const call = createModel(make(), { prices }).stream({ prompt: "Count words" }, ctx);
    const request = await arrived;
    const err = await rejection(call);
    const settledAt = performance.now();
    expect(err.code).toBe("CANCELLED");
    expect(settledAt - cancelledAt).toBeLessThan(100);
    const closed = await request.closed;
    expect(closed.early).toBe(true);
    expect(closed.at - cancelledAt).toBeLessThan(100);
    const usage = ctx.tokenUsage;
    expect(usage.promptTokens).toBeGreaterThan(0);
    expect(usage.completionTokens).toBe(Math.ceil("word ".repeat(5).length / 4));
    const chat = ctx.spans.find((s) => s.name === "chat")!;
    expect(chat.attributes["nerva.usage.estimated"]).toBe(true);
    expect(chat.status).toBe("error");
    expect(getEventListeners(ctx.signal, "abort")).toHaveLength(0);
  });

  it("a deadline shorter than retry-after fails RATE_LIMITED at once, with no further request", async () => {
    server.enqueue({ status: 429, headers: { "retry-after": "5" } });
    const before = server.requests.length;
    const ctx = ExecContext.create({ timeoutSeconds: 2 });
    const started = performance.now();
    const err = await rejection(
      createModel(make(), { retry: { maxAttempts: 4 } }).generate({ prompt: "hi" }, ctx),
    );
    expect(performance.now() - started).toBeLessThan(1000);
    expect(err.code).toBe("RATE_LIMITED");
    expect(err.details["retryAfterSeconds"]).toBe(5);
    expect(err.message).toContain(`${provider}/gpt-4o-mini`);
    expect(err.message).toContain("429");
    expect(err.message).not.toContain("sk-test-key");
    await new Promise((r) => setTimeout(r, 50));
    expect(server.requests.length - before).toBe(1);
    expect(ctx.events.filter((e) => e.name === "llm.retry")).toHaveLength(0);
  });

  it("a retry-after above maxDelaySeconds fails RATE_LIMITED at once, with no further request", async () => {
    server.enqueue({ status: 429, headers: { "retry-after": "5" } });
    const before = server.requests.length;
    const ctx = ExecContext.create();
    const started = performance.now();
    const err = await rejection(
      createModel(make(), { retry: { maxAttempts: 4, maxDelaySeconds: 1 } }).generate(
        {
          prompt: "hi",
        },
        ctx,
      ),
    );
    expect(performance.now() - started).toBeLessThan(1000);
    expect(err.code).toBe("RATE_LIMITED");
    expect(err.details["retryAfterSeconds"]).toBe(5);
    await new Promise((r) => setTimeout(r, 50));
    expect(server.requests.length - before).toBe(1);
    expect(ctx.events.filter((e) => e.name === "llm.retry")).toHaveLength(0);
  });

  it("backs off by the runs' formula: initialDelaySeconds × backoffFactor^(n-1), less jitter", async () => {
    server.enqueue({ status: 500 }, { status: 500 }, { text: "ok" });
    const ctx = ExecContext.create();
    const model = createModel(make(), {
      retry: { maxAttempts: 3, initialDelaySeconds: 0.02, backoffFactor: 3, jitter: 0 },
    });
    await model.generate({ prompt: "hi" }, ctx);
    const delays = ctx.events
      .filter((e) => e.name === "llm.retry")
      .map((e) => e.attributes["delay_ms"]);
    expect(delays).toEqual([20, 60]);
  });

  it("retries 429 (honouring retry-after-ms) and 500, then succeeds; each attempt is a chat span", async () => {
    server.enqueue(
      { status: 429, headers: { "retry-after-ms": "30" } },
      { status: 500 },
      { text: "finally", usage: { promptTokens: 3, completionTokens: 1 } },
    );
    const before = server.requests.length;
    const ctx = ExecContext.create({ timeoutSeconds: 10 });
    const model = createModel(make(), {
      retry: { maxAttempts: 4, initialDelaySeconds: 0.01, maxDelaySeconds: 0.05 },
    });
    const { text } = await model.generate({ prompt: "hi" }, ctx);
    expect(text).toBe("finally");
    expect(server.requests.length - before).toBe(3);
    const retries = ctx.events.filter((e) => e.name === "llm.retry");
    expect(retries.map((e) => e.attributes["status"])).toEqual([429, 500]);
    expect(retries[0]!.attributes["delay_ms"]).toBe(30);
    const spans = ctx.spans.filter((s) => s.name === "chat");
    expect(spans.map((s) => s.status)).toEqual(["error", "error", "ok"]);
    expect(spans.map((s) => s.attributes["http.response.status_code"])).toEqual([
      429,
      500,
      undefined,
    ]);
    expect(ctx.tokenUsage.promptTokens).toBe(3);
  });

  it("a stream is retried before its first chunk", async () => {
    server.enqueue(
      { status: 503 },
      { chunks: ["a", "b"], usage: { promptTokens: 1, completionTokens: 1 } },
    );
    const { chunks, sink } = collector();
    const ctx = ExecContext.create({ stream: sink });
    await createModel(make(), { retry: { initialDelaySeconds: 0.005 } }).stream(
      {
        prompt: "x",
      },
      ctx,
    );
    expect(chunks).toEqual(["a", "b"]);
    expect(ctx.events.filter((e) => e.name === "llm.retry")).toHaveLength(1);
  });

  it("gives up after maxAttempts tries in all with INTERNAL naming provider, model and status", async () => {
    server.enqueue({ status: 500 }, { status: 502 });
    const ctx = ExecContext.create();
    const err = await rejection(
      createModel(make(), { retry: { maxAttempts: 2, initialDelaySeconds: 0.001 } }).generate(
        {
          prompt: "x",
        },
        ctx,
      ),
    );
    expect(err.code).toBe("INTERNAL");
    expect(err.message).toMatch(new RegExp(`${provider}/gpt-4o-mini.*HTTP 502`));
    expect(err.details).toMatchObject({ provider, model: "gpt-4o-mini", status: 502 });
  });
});

describe("usage never disappears", () => {
  it("a stream without a usage chunk is charged an estimate", async () => {
    const model = createModel(
      createOpenAICompatible({ name: "fake", baseURL: server.url, includeUsage: false }).chatModel(
        "gpt-4o-mini",
      ),
    );
    server.enqueue({ text: "abcdefgh", usage: { promptTokens: 99, completionTokens: 99 } });
    const ctx = ExecContext.create();
    const { usage } = await model.stream({ prompt: "12345678" }, ctx);
    expect(server.requests.at(-1)!.includeUsage).toBe(false);
    expect(usage.estimated).toBe(true);
    expect(usage.outputTokens).toBe(2);
    expect(usage.inputTokens).toBe(2);
  });

  it("a deadline mid-stream settles TIMEOUT at once and charges the estimate", async () => {
    server.enqueue({ text: "slow ".repeat(100), hangAfterChunks: 3 });
    const ctx = ExecContext.create({ timeoutSeconds: 0.3 });
    const err = await rejection(createModel(compatible()).stream({ prompt: "go" }, ctx));
    expect(err.code).toBe("TIMEOUT");
    expect(performance.now() - ctx.createdAt).toBeLessThan(5_000); // settled, not hung
    expect(ctx.tokenUsage.completionTokens).toBe(Math.ceil("slow ".repeat(3).length / 4));
  });
});

describe("cancellation of a generate call", () => {
  it("ctx.cancel() while the provider thinks: CANCELLED within 100 ms, the socket closed, the prompt charged", async () => {
    server.enqueue({ text: "late", delaySeconds: 3 });
    const ctx = ExecContext.create();
    const arrived = server.nextRequest();
    const call = createModel(compatible()).generate({ prompt: "x".repeat(40) }, ctx);
    const request = await arrived;
    const cancelledAt = performance.now();
    ctx.cancel("the user left");
    const err = await rejection(call);
    expect(err.code).toBe("CANCELLED");
    expect(performance.now() - cancelledAt).toBeLessThan(100);
    const closed = await request.closed;
    expect(closed.early).toBe(true);
    expect(closed.at - cancelledAt).toBeLessThan(100);
    expect(ctx.tokenUsage.promptTokens).toBe(10);
    expect(ctx.spans.find((s) => s.name === "chat")!.attributes["nerva.usage.estimated"]).toBe(
      true,
    );
    expect(getEventListeners(ctx.signal, "abort")).toHaveLength(0);
  });
});

describe("errors", () => {
  it("a string model id is refused unless allowGateway", () => {
    expect(() => createModel("openai/gpt-4o-mini")).toThrow(/allowGateway/);
    const model = createModel("openai/gpt-4o-mini", { allowGateway: true });
    expect(model.id).toBe("openai/gpt-4o-mini");
  });

  it("a connection refused is retried, then INTERNAL without a status", async () => {
    const dead = await FakeOpenAIServer.start();
    const url = dead.url;
    await dead.close();
    const model = createModel(
      createOpenAICompatible({ name: "fake", baseURL: url }).chatModel("m"),
      {
        retry: { maxAttempts: 2, initialDelaySeconds: 0.001 },
      },
    );
    const ctx = ExecContext.create();
    const err = await rejection(model.generate({ prompt: "x" }, ctx));
    expect(isNervaError(err, "INTERNAL")).toBe(true);
    expect(err.message).toContain("fake/m");
    expect(ctx.events.filter((e) => e.name === "llm.retry")).toHaveLength(1);
  });
});

describe("FakeOpenAIServer.start options", () => {
  it("serves on a fixed port, answers through respond, and refuses a bad or busy port", async () => {
    const probe = await FakeOpenAIServer.start();
    const port = Number(new URL(probe.url).port);
    await probe.close();
    const server = await FakeOpenAIServer.start({
      port,
      respond: (req) => ({ text: `fixed: ${String(req.stream)}` }),
    });
    try {
      expect(server.url).toBe(`http://127.0.0.1:${port}/v1`);
      const res = await fetch(`${server.url}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }),
      });
      const body = (await res.json()) as { choices: { message: { content: string } }[] };
      expect(body.choices[0]?.message.content).toBe("fixed: false");
      const busy = await FakeOpenAIServer.start({ port }).catch((e: unknown) => e);
      expect(busy).toMatchObject({ code: "UNAVAILABLE" });
    } finally {
      await server.close();
    }
    for (const bad of [-1, 70_000, 1.5]) {
      const refused = await FakeOpenAIServer.start({ port: bad }).catch((e: unknown) => e);
      expect(refused).toMatchObject({ code: "INVALID_OPTIONS" });
    }
  });
});
