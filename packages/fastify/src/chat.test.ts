// useChat's own client (the `ai` package's DefaultChatTransport and readUIMessageStream, v6:
// ui/http-chat-transport.ts for the routes and the 204, ui/default-chat-transport.ts for the
// replay on resume) against nervaChat on a real Fastify server. The Express suite
// (packages/express/src/chat.test.ts) covers tool parts, usage and every store; this one the
// Fastify glue: streaming, a reconnect mid-answer, stop, and refusals answered before hijacking.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { InMemoryRunStore, RunQueue, Runner, type RunStore } from "@nerva/core";
import { SqliteRunStore } from "@nerva/core/sqlite";
import { createChatRoutes } from "@nerva/core/ui-stream";
import { DefaultChatTransport, readUIMessageStream, type UIMessage, type UIMessageChunk } from "ai";
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { nervaChat, nervaPlugin } from "./index.js";

const TOKENS = ["One", " two", " three", " four"];
const dir = mkdtempSync(join(tmpdir(), "nerva-fastify-chat-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const STORES: [string, () => RunStore][] = [
  ["in memory", () => new InMemoryRunStore()],
  [
    "SQLite",
    () => new SqliteRunStore({ path: join(dir, `${Math.random()}.db`), pollSeconds: 0.05 }),
  ],
];

describe.each(STORES)("nervaChat on Fastify (%s)", (_name, makeStore) => {
  let app: FastifyInstance;
  let runner: Runner;
  let queue: RunQueue;
  let url: string;
  let open: () => void;

  beforeEach(async () => {
    queue = new RunQueue({ store: makeStore(), name: "chat", retry: { maxAttempts: 1 } });
    const gate = new Promise<void>((resolve) => (open = resolve));
    runner = new Runner({
      queue,
      handlers: {
        chat_agent: async function* (input) {
          for (const [i, token] of TOKENS.entries()) {
            if (i === 2 && input.message === "slow") await gate;
            yield token;
          }
        },
      },
    });
    await runner.start();
    app = Fastify();
    await app.register(nervaPlugin, {
      resolve: (request) => ({
        userId: (request.headers["x-test-user"] as string | undefined) ?? null,
        allowedAgents: null,
      }),
    });
    await app.register(nervaChat(createChatRoutes({ queue, handler: "chat_agent" })));
    url = await app.listen({ port: 0, host: "127.0.0.1" });
  });
  afterEach(async () => {
    await app.close();
    await runner.stop({ graceSeconds: 1 });
    await queue.store.close();
  });

  const transport = (user = "alice") =>
    new DefaultChatTransport<UIMessage>({
      api: `${url}/api/chat`,
      headers: { "x-test-user": user },
    });
  const send = (text: string, chatId: string, signal?: AbortSignal) =>
    transport().sendMessages({
      chatId,
      messages: [{ id: `m-${chatId}`, role: "user", parts: [{ type: "text", text }] }],
      trigger: "submit-message",
      messageId: undefined,
      abortSignal: signal,
    });
  async function textOf(stream: ReadableStream<UIMessageChunk>): Promise<string> {
    let last: UIMessage | undefined;
    for await (const m of readUIMessageStream({ stream })) last = m;
    return (last?.parts ?? []).map((p) => (p.type === "text" ? p.text : "")).join("");
  }

  it("streams an answer with the protocol's header", async () => {
    const res = await fetch(`${url}/api/chat`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-test-user": "alice" },
      body: JSON.stringify({
        id: "c0",
        messages: [{ id: "m", role: "user", parts: [{ type: "text", text: "hi" }] }],
        trigger: "submit-message",
      }),
    });
    expect(res.headers.get("x-vercel-ai-ui-message-stream")).toBe("v1");
    expect(res.headers.get("x-request-id")).toBeTruthy();
    expect((await res.text()).trimEnd().endsWith("data: [DONE]")).toBe(true);
    expect(await textOf(await send("hi", "c1"))).toBe(TOKENS.join(""));
  });

  it("completes an answer cut mid-way on reconnect, then stops nothing that ended", async () => {
    const cut = new AbortController();
    const reader = (await send("slow", "c2", cut.signal)).getReader();
    let seen = "";
    while (seen !== TOKENS.slice(0, 2).join("")) {
      const { value } = await reader.read();
      if (value?.type === "text-delta") seen += value.delta;
    }
    cut.abort();
    await reader.cancel().catch(() => undefined);
    const resumed = await transport().reconnectToStream({ chatId: "c2" });
    open();
    expect(await textOf(resumed as ReadableStream<UIMessageChunk>)).toBe(TOKENS.join(""));
    expect(await transport().reconnectToStream({ chatId: "c2" })).toBeNull();
    const stop = await fetch(`${url}/api/chat/c2/stop`, {
      method: "POST",
      headers: { "x-test-user": "alice" },
    });
    expect(stop.status).toBe(404);
  });

  it("stops a running answer for its user only", async () => {
    const reader = (await send("slow", "c3")).getReader();
    while ((await reader.read()).value?.type !== "text-delta");
    expect(await transport("mallory").reconnectToStream({ chatId: "c3" })).toBeNull();
    const other = await fetch(`${url}/api/chat/c3/stop`, {
      method: "POST",
      headers: { "x-test-user": "mallory" },
    });
    expect(other.status).toBe(404);
    const stop = await fetch(`${url}/api/chat/c3/stop`, {
      method: "POST",
      headers: { "x-test-user": "alice" },
    });
    expect(await stop.json()).toMatchObject({ status: expect.stringMatching(/running|cancelled/) });
    const types: string[] = [];
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      types.push(value.type);
    }
    expect(types).toContain("abort");
  });

  it("answers a bad body with 400 naming the field, and no user with 401", async () => {
    const bad = await fetch(`${url}/api/chat`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-test-user": "alice" },
      body: JSON.stringify({ id: "c4", messages: "hi", trigger: "submit-message" }),
    });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain("body.messages");
    const anonymous = await fetch(`${url}/api/chat/c4/stream`);
    expect(anonymous.status).toBe(401);
    expect((await queue.list()).runs).toEqual([]);
  });
});
