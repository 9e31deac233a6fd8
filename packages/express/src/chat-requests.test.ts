// The chat routes beyond what useChat's transport sends (see chat.test.ts for the protocol's
// sources): a client that resumes with Last-Event-ID (the SSE `id:` of the last chunk it got),
// history from Nerva's memory, and requests refused before anything starts.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { InMemoryRunStore } from "@nerva/core";
import { SqliteRunStore } from "@nerva/core/sqlite";
import { DefaultChatTransport, readUIMessageStream, type UIMessage } from "ai";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { TOKENS, sseEvents, startChatApp, type ChatApp } from "./chat.test-support.js";

const dir = mkdtempSync(join(tmpdir(), "nerva-chat-requests-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function userMessage(text: string, id = `m-${text}`): UIMessage {
  return { id, role: "user", parts: [{ type: "text", text }] };
}

describe("resuming after Last-Event-ID", () => {
  let app: ChatApp;
  beforeEach(async () => {
    app = await startChatApp(
      new SqliteRunStore({ path: join(dir, `${Math.random()}.db`), pollSeconds: 0.05 }),
    );
  });
  afterEach(async () => {
    await app.close();
  });

  it("continues the open text part right after the last event the client got", async () => {
    const headers = { "content-type": "application/json", "x-test-user": "alice" };
    const cut = new AbortController();
    const first = await fetch(`${app.url}/api/chat`, {
      method: "POST",
      headers,
      signal: cut.signal,
      body: JSON.stringify({
        id: "c7",
        messages: [userMessage("slow")],
        trigger: "submit-message",
      }),
    });
    let lastId = 0;
    let before = "";
    for await (const e of sseEvents(first)) {
      if (e.id !== undefined) lastId = e.id;
      const chunk = e.data as { type: string; delta?: string };
      if (chunk.type === "text-delta") before += chunk.delta;
      if (before === TOKENS.slice(0, 3).join("") && e.id !== undefined) break;
    }
    cut.abort();
    const resumed = await fetch(`${app.url}/api/chat/c7/stream`, {
      headers: { "x-test-user": "alice", "last-event-id": String(lastId) },
    });
    app.open();
    const chunks: { type: string; delta?: string }[] = [];
    for await (const e of sseEvents(resumed))
      if (e.data !== "[DONE]") chunks.push(e.data as { type: string });
    expect(chunks[0]?.type).toBe("start");
    // No second text-start: the text part the client has open goes on.
    expect(chunks.filter((c) => c.type === "text-start")).toEqual([]);
    const after = chunks.flatMap((c) => (c.type === "text-delta" ? [c.delta] : [])).join("");
    expect(before + after).toBe(TOKENS.join(""));
  });

  it("refuses a Last-Event-ID that is not a seq with 400", async () => {
    const res = await fetch(`${app.url}/api/chat/c8/stream`, {
      headers: { "x-test-user": "alice", "last-event-id": "abc" },
    });
    expect(res.status).toBe(400);
  });
});

describe("history from Nerva's memory", () => {
  it("passes no earlier turns to the run", async () => {
    const app = await startChatApp(new InMemoryRunStore(), "memory");
    try {
      const transport = new DefaultChatTransport<UIMessage>({
        api: `${app.url}/api/chat`,
        headers: { "x-test-user": "alice" },
      });
      const stream = await transport.sendMessages({
        chatId: "c9",
        messages: [
          userMessage("hi", "u1"),
          { id: "a1", role: "assistant", parts: [{ type: "text", text: "hello" }] },
          userMessage("history", "u2"),
        ],
        trigger: "submit-message",
        messageId: undefined,
        abortSignal: undefined,
      });
      for await (const _message of readUIMessageStream({ stream })) {
        // Read to the end: the run has answered.
      }
      const [run] = (await app.queue.list({ userId: "alice" })).runs;
      expect(run?.input).toMatchObject({ message: "history", history: [] });
    } finally {
      await app.close();
    }
  });
});

describe("nervaChat refuses bad requests before starting anything", () => {
  let app: ChatApp;
  beforeEach(async () => {
    app = await startChatApp(new InMemoryRunStore());
  });
  afterEach(async () => {
    await app.close();
  });

  const post = (body: unknown, user: string | null = "alice") =>
    fetch(`${app.url}/api/chat`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...(user === null ? {} : { "x-test-user": user }),
      },
      body: JSON.stringify(body),
    });

  it("answers 400 naming the field", async () => {
    const res = await post({ id: "c1", messages: [], trigger: "submit-message" });
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { issues: { path: string }[] } };
    expect(error.issues[0]?.path).toBe("body.messages");
    const last = await post({
      id: "c1",
      messages: [{ id: "a", role: "assistant", parts: [{ type: "text", text: "x" }] }],
      trigger: "submit-message",
    });
    expect(last.status).toBe(400);
    expect(await last.text()).toContain("body.messages.0");
    expect((await app.queue.list()).runs).toEqual([]);
  });

  it("answers 401 without a user", async () => {
    const res = await post(
      { id: "c1", messages: [userMessage("tell")], trigger: "submit-message" },
      null,
    );
    expect(res.status).toBe(401);
    expect((await app.queue.list()).runs).toEqual([]);
  });

  it("answers 400 for a chat id that is not one", async () => {
    const res = await fetch(`${app.url}/api/chat/${encodeURIComponent("a b")}/stream`, {
      headers: { "x-test-user": "alice" },
    });
    expect(res.status).toBe(400);
  });
});
