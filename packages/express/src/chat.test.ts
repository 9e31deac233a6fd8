// useChat's own client against the chat routes on a real Express server. The protocol is the AI
// SDK's (the `ai` package, v6.0.326), read from its sources, not guessed:
// - ui-message-stream/ui-message-chunks.ts: `uiMessageChunkSchema`, the chunks the client parses;
// - ui-message-stream/ui-message-stream-headers.ts: `x-vercel-ai-ui-message-stream: v1`;
// - ui-message-stream/json-to-sse-transform-stream.ts: `data: <json>` events, then `data: [DONE]`;
// - ui/http-chat-transport.ts: POST `{ id, messages, trigger, messageId }`; reconnectToStream is
//   GET `${api}/${chatId}/stream`, 204 = nothing to resume, any other non-2xx throws;
// - ui/default-chat-transport.ts + ui/chat.ts + ui/process-ui-message-stream.ts: a resumed
//   stream is a replay by default (`resumeStreamIsReplay`): its first `start` resets the message.
import { execSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { InMemoryRunStore, type RunStore } from "@nerva/core";
import { RedisRunStore } from "@nerva/core/redis";
import { SqliteRunStore } from "@nerva/core/sqlite";
import { DefaultChatTransport, readUIMessageStream, type UIMessage, type UIMessageChunk } from "ai";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { TOKENS, startChatApp, type ChatApp } from "./chat.test-support.js";

const dir = mkdtempSync(join(tmpdir(), "nerva-chat-"));
const REDIS_URL = process.env["NERVA_REDIS_URL"] ?? "redis://127.0.0.1:6379";
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  execSync(
    `redis-cli -u ${REDIS_URL} --scan --pattern 'nerva-test:chat:${process.pid}:*' | xargs -r redis-cli -u ${REDIS_URL} del`,
  );
});

const STORES: [string, () => RunStore][] = [
  ["in memory", () => new InMemoryRunStore()],
  [
    "SQLite",
    () => new SqliteRunStore({ path: join(dir, `${Math.random()}.db`), pollSeconds: 0.05 }),
  ],
  [
    "Redis",
    () =>
      new RedisRunStore({
        url: REDIS_URL,
        // A prefix of its own per app: no run of another test or process is listed.
        prefix: `nerva-test:chat:${process.pid}:${Math.random().toString(36).slice(2)}`,
      }),
  ],
];

function userMessage(text: string, id = `m-${text}`): UIMessage {
  return { id, role: "user", parts: [{ type: "text", text }] };
}

function transport(app: ChatApp, user = "alice"): DefaultChatTransport<UIMessage> {
  return new DefaultChatTransport({ api: `${app.url}/api/chat`, headers: { "x-test-user": user } });
}

/** The message a stream builds (as useChat would), and the errors it reported. */
async function messageOf(
  stream: ReadableStream<UIMessageChunk>,
): Promise<{ message: UIMessage; errors: string[] }> {
  const errors: string[] = [];
  let message: UIMessage | undefined;
  for await (const m of readUIMessageStream({ stream, onError: (e) => errors.push(String(e)) })) {
    message = m;
  }
  if (message === undefined) throw new Error("the stream built no message");
  return { message, errors };
}

const textOf = (m: UIMessage): string =>
  m.parts.map((p) => (p.type === "text" ? p.text : "")).join("");

describe.each(STORES)("useChat's transport against nervaChat (%s)", (_name, makeStore) => {
  let app: ChatApp;
  beforeEach(async () => {
    app = await startChatApp(makeStore());
  });
  afterEach(async () => {
    await app.close();
  });

  it("streams the tokens in order, as one text part of a message whose id is the run's", async () => {
    const stream = await transport(app).sendMessages({
      chatId: "c1",
      messages: [userMessage("tell")],
      trigger: "submit-message",
      messageId: undefined,
      abortSignal: undefined,
    });
    const { message, errors } = await messageOf(stream);
    expect(errors).toEqual([]);
    expect(message.parts.filter((p) => p.type === "text")).toHaveLength(1);
    expect(textOf(message)).toBe(TOKENS.join(""));
    expect(message.id).toMatch(/^run_/);
    expect(message.metadata).toMatchObject({ runId: message.id, status: "succeeded" });
  });

  it("shows a tool call as a tool part with its input and output, and the usage in the finish", async () => {
    const stream = await transport(app).sendMessages({
      chatId: "c2",
      messages: [userMessage("weather")],
      trigger: "submit-message",
      messageId: undefined,
      abortSignal: undefined,
    });
    const { message } = await messageOf(stream);
    expect(message.parts.map((p) => p.type)).toEqual([
      "step-start",
      "text",
      "tool-get_weather",
      "text",
    ]);
    expect(message.parts[2]).toMatchObject({
      state: "output-available",
      input: { city: "Oslo" },
      output: { city: "Oslo", sky: "sunny" },
    });
    expect(textOf(message)).toBe("Let me look. It is sunny.");
    expect(message.metadata).toMatchObject({
      usage: { promptTokens: 12, completionTokens: 7, totalTokens: 19, costUsd: 0.001 },
    });
  });

  it("passes the earlier turns of the client's messages as the run's history", async () => {
    const stream = await transport(app).sendMessages({
      chatId: "c3",
      messages: [
        userMessage("hi", "u1"),
        { id: "a1", role: "assistant", parts: [{ type: "text", text: "hello" }] },
        userMessage("history", "u2"),
      ],
      trigger: "submit-message",
      messageId: undefined,
      abortSignal: undefined,
    });
    expect(textOf((await messageOf(stream)).message)).toBe("user:hi|assistant:hello");
  });

  it("shows a failure with client-safe text only", async () => {
    const stream = await transport(app).sendMessages({
      chatId: "c4",
      messages: [userMessage("boom")],
      trigger: "submit-message",
      messageId: undefined,
      abortSignal: undefined,
    });
    const { message, errors } = await messageOf(stream);
    expect(errors).toEqual(["Error: the agent failed"]);
    expect(JSON.stringify(message)).not.toContain("secret-db");
    expect(message.metadata).toMatchObject({ status: "failed" });
  });

  it("completes a message cut mid-answer on reconnect, nothing repeated or missing", async () => {
    const cut = new AbortController();
    const first = await transport(app).sendMessages({
      chatId: "c5",
      messages: [userMessage("slow")],
      trigger: "submit-message",
      messageId: undefined,
      abortSignal: cut.signal,
    });
    // Read until the answer waits at its gate (three tokens), then cut the connection.
    const reader = first.getReader();
    let seen = "";
    while (seen !== TOKENS.slice(0, 3).join("")) {
      const { value } = await reader.read();
      if (value?.type === "text-delta") seen += value.delta;
    }
    cut.abort();
    await reader.cancel().catch(() => undefined);
    // A closed tab does not cancel: the run is still going.
    const [active] = (await app.queue.list({ userId: "alice", status: "running" })).runs;
    expect(active?.input.args).toMatchObject({ chatId: "c5" });

    const resumed = await transport(app).reconnectToStream({ chatId: "c5" });
    expect(resumed).not.toBeNull();
    app.open();
    const { message, errors } = await messageOf(resumed as ReadableStream<UIMessageChunk>);
    expect(errors).toEqual([]);
    expect(message.id).toBe(active?.id);
    expect(message.parts.filter((p) => p.type === "text")).toHaveLength(1);
    expect(textOf(message)).toBe(TOKENS.join(""));
  });

  it("answers 204 when the chat has nothing running (the transport gives null)", async () => {
    expect(await transport(app).reconnectToStream({ chatId: "nothing-here" })).toBeNull();
  });

  it("stops the run, and lets no other user resume or stop it", async () => {
    const cut = new AbortController();
    const first = await transport(app).sendMessages({
      chatId: "c6",
      messages: [userMessage("slow")],
      trigger: "submit-message",
      messageId: undefined,
      abortSignal: cut.signal,
    });
    const reader = first.getReader();
    for (;;) {
      const { value } = await reader.read();
      if (value?.type === "text-delta") break;
    }
    // Another user: nothing to resume (204), nothing to stop (404).
    expect(await transport(app, "mallory").reconnectToStream({ chatId: "c6" })).toBeNull();
    const denied = await fetch(`${app.url}/api/chat/c6/stop`, {
      method: "POST",
      headers: { "x-test-user": "mallory" },
    });
    expect(denied.status).toBe(404);

    const stopped = await fetch(`${app.url}/api/chat/c6/stop`, {
      method: "POST",
      headers: { "x-test-user": "alice" },
    });
    expect(stopped.status).toBe(200);
    const { runId } = (await stopped.json()) as { runId: string };
    // The open stream ends with the run, cancelled.
    const rest: string[] = [];
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      rest.push(value.type);
    }
    expect(rest).toContain("abort");
    expect(rest.at(-1)).toBe("finish");
    const run = await app.queue.wait(runId, { timeoutSeconds: 10 });
    expect(run.status).toBe("cancelled");
    expect(await transport(app).reconnectToStream({ chatId: "c6" })).toBeNull();
  });
});
