// A provider that echoes the API key in its error body, through the real providers against a real
// local HTTP server: the key is masked by its own value, whatever its shape, in the error's message,
// details and cause chain, the chat spans, and the retry events.
import "./no-network.test-support.js";
import { randomBytes } from "node:crypto";
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { ExecContext, NervaError, isNervaError } from "@nerva/core";
import { wrapLanguageModel } from "ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createModel } from "./index.js";
import { FakeOpenAIServer } from "./testing/index.js";

let server: FakeOpenAIServer;
beforeAll(async () => {
  server = await FakeOpenAIServer.start();
});
afterAll(async () => {
  await server.close();
});

const hex = (n: number): string => randomBytes(n).toString("hex");
// Shapes no pattern knows, and shapes of real providers other than sk-/key-/Bearer/AIza.
const KEYS = {
  groq: `gsk_${hex(20)}`,
  xai: `xai-${hex(20)}`,
  huggingface: `hf_${hex(17)}`,
  "bare hex": hex(32),
  "a passphrase": `correct horse battery staple ${hex(3)}`,
};

/** Every string reachable from `value` (own properties, error messages and stacks, causes). */
function strings(value: unknown, seen = new Set<unknown>()): string[] {
  if (typeof value === "string") return [value];
  if (typeof value !== "object" || value === null || seen.has(value)) return [];
  seen.add(value);
  const out: string[] = [];
  for (const key of Object.getOwnPropertyNames(value)) {
    out.push(...strings((value as Record<string, unknown>)[key], seen));
  }
  if (value instanceof Map) for (const v of value.values()) out.push(...strings(v, seen));
  return out;
}

function expectNowhere(key: string, ...where: unknown[]): void {
  const fragment = key.slice(4, 16);
  for (const text of where.flatMap((w) => strings(w))) {
    expect(text).not.toContain(key);
    expect(text).not.toContain(fragment);
  }
}

async function rejection(p: Promise<unknown>): Promise<NervaError> {
  try {
    await p;
  } catch (err) {
    expect(isNervaError(err)).toBe(true);
    return err as NervaError;
  }
  throw new Error("expected a rejection");
}

const echo = (key: string): string =>
  `Incorrect API key provided: ${key}. You can find your API key at https://example.test/keys (key starts ${key.slice(0, 12)}).`;

describe.each(Object.entries(KEYS))("a key shaped as %s, echoed by the provider", (_shape, key) => {
  const providers = {
    "@ai-sdk/openai": () => createOpenAI({ baseURL: server.url, apiKey: key }).chat("gpt-4o-mini"),
    "@ai-sdk/openai-compatible": () =>
      createOpenAICompatible({ name: "fake", baseURL: server.url, apiKey: key }).chatModel("m"),
  };

  for (const [name, make] of Object.entries(providers)) {
    it(`never reaches the error, its cause, the spans or the events (${name}, generate and stream)`, async () => {
      for (const streaming of [false, true]) {
        server.enqueue(
          { status: 500, errorMessage: echo(key) },
          { status: 401, errorMessage: echo(key) },
        );
        const model = createModel(make(), { retry: { maxAttempts: 2, initialDelaySeconds: 0 } });
        const ctx = ExecContext.create();
        const call = streaming
          ? model.stream({ prompt: "hi" }, ctx)
          : model.generate({ prompt: "hi" }, ctx);
        const err = await rejection(call);
        expect(err.message).toMatch(/HTTP 401/);
        expect(err.message).toContain("[redacted]");
        expect(ctx.events.some((e) => e.name === "llm.retry")).toBe(true);
        expectNowhere(key, err, ctx.spans, ctx.events);
      }
    });
  }
});

describe("secrets the model does not show", () => {
  it("masks the values given in options.secrets, for a model whose configuration is hidden", async () => {
    const key = `tok.${hex(16)}`;
    const hidden = wrapLanguageModel({
      model: createOpenAICompatible({ name: "fake", baseURL: server.url, apiKey: key }).chatModel(
        "m",
      ),
      middleware: { specificationVersion: "v3" },
    });
    server.enqueue({ status: 400, errorMessage: echo(key) });
    const unmasked = await rejection(
      createModel(hidden, { retry: { maxAttempts: 1 } }).generate(
        {
          prompt: "hi",
        },
        ExecContext.create(),
      ),
    );
    // Without the option the key is not known to the adapter, and comes back as the provider sent it.
    expect(unmasked.message).toContain(key);
    server.enqueue({ status: 400, errorMessage: echo(key) });
    const ctx = ExecContext.create();
    const err = await rejection(
      createModel(hidden, { retry: { maxAttempts: 1 }, secrets: [key] }).generate(
        {
          prompt: "hi",
        },
        ctx,
      ),
    );
    expectNowhere(key, err, ctx.spans, ctx.events);
  });

  it("refuses a secret too short to mask without masking ordinary words", () => {
    const model = createOpenAICompatible({ name: "fake", baseURL: server.url }).chatModel("m");
    expect(() => createModel(model, { secrets: ["abc"] })).toThrow(/options\.secrets\.0/);
  });
});
