// A model stream whose reader fails: the upstream HTTP response is closed, not left streaming. The
// server (a real one on 127.0.0.1) stalls after three chunks and keeps the response open, so the
// only way its socket closes is the client hanging up.
import "./no-network.test-support.js";
import { getEventListeners } from "node:events";
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { ExecContext, isNervaError } from "@nerva/core";
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

const providers = {
  "@ai-sdk/openai": () =>
    createOpenAI({ baseURL: server.url, apiKey: "sk-test-key-123456789" }).chat("gpt-4o-mini"),
  "@ai-sdk/openai-compatible": () =>
    createOpenAICompatible({ name: "fake", baseURL: server.url, includeUsage: true }).chatModel(
      "m",
    ),
};

const failures = {
  "push throws": (): void => {
    throw new Error("the client went away");
  },
  "push rejects": (): Promise<void> => Promise.reject(new Error("the client went away")),
};

describe.each(Object.entries(providers))("a stream through %s", (_name, make) => {
  it.each(Object.entries(failures))(
    "when %s mid-stream: the call rejects with that error and the response's socket closes",
    async (_how, push) => {
      server.enqueue({ text: "one two three four five six", hangAfterChunks: 3 });
      let pushes = 0;
      const ctx = ExecContext.create({
        stream: {
          push: () => {
            pushes++;
            return pushes === 2 ? push() : undefined;
          },
        },
      });
      const arrived = server.nextRequest();
      const call = createModel(make()).stream({ prompt: "Count" }, ctx);
      const request = await arrived;
      await expect(call).rejects.toThrow(/the client went away/);
      const closed = await request.closed;
      expect(closed.early).toBe(true);
      expect(pushes).toBe(2);
      const chat = ctx.spans.find((s) => s.name === "chat")!;
      expect(chat.endMs).not.toBeNull();
      expect(getEventListeners(ctx.signal, "abort")).toHaveLength(0);
      // The context itself was not cancelled: only the call's own request ended.
      expect(ctx.signal.aborted).toBe(false);
    },
  );

  it("a later cancel of the context finds nothing of the call left", async () => {
    server.enqueue({ text: "one two three four five six", hangAfterChunks: 3 });
    const ctx = ExecContext.create({
      stream: {
        push: () => {
          throw new Error("sink broke");
        },
      },
    });
    const arrived = server.nextRequest();
    const err = await createModel(make())
      .stream({ prompt: "Count" }, ctx)
      .catch((e: unknown) => e);
    expect(isNervaError(err) || err instanceof Error).toBe(true);
    expect((await (await arrived).closed).early).toBe(true);
    ctx.cancel("late");
    expect(getEventListeners(ctx.signal, "abort")).toHaveLength(0);
  });
});
