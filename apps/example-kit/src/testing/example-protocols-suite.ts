// The protocols every example app serves, driven by their real clients: the `ai` package's
// DefaultChatTransport and readUIMessageStream (what useChat runs), @ag-ui/client's HttpAgent and
// the MCP SDK's Client over Streamable HTTP.
import { HttpAgent } from "@ag-ui/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { DefaultChatTransport, readUIMessageStream, type UIMessage, type UIMessageChunk } from "ai";
import { describe, expect, it } from "vitest";
import type { StartedExampleApp } from "./example-app-suite.js";

const JSON_TYPE = { "content-type": "application/json" };

/** The new routes, each refused without a valid token. */
const PROTECTED: readonly { method: string; path: string; body?: unknown }[] = [
  {
    method: "POST",
    path: "/api/chat",
    body: {
      id: "c1",
      messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "hi" }] }],
      trigger: "submit-message",
    },
  },
  { method: "GET", path: "/api/chat/c1/stream" },
  { method: "POST", path: "/api/chat/c1/stop" },
  { method: "POST", path: "/ag-ui", body: { threadId: "t1", runId: "r1", messages: [] } },
  { method: "POST", path: "/mcp", body: { jsonrpc: "2.0", id: 1, method: "tools/list" } },
  { method: "GET", path: "/mcp" },
  { method: "DELETE", path: "/mcp" },
];

/**
 * `/api/chat` (with `useChat`'s transport: a streamed answer, a tool call its user approves, 204
 * when idle), `/ag-ui` (HttpAgent, the session's memory across runs), `/mcp` (the SDK's Client:
 * list and call as the token's user), and 401 on every one of them without a valid token.
 */
export function describeExampleProtocols(
  app: () => StartedExampleApp,
  tokenFor: (user: string, roles?: string[]) => Promise<string>,
): void {
  const transport = (token: string) =>
    new DefaultChatTransport<UIMessage>({
      api: `${app().url}/api/chat`,
      headers: { authorization: `Bearer ${token}` },
    });
  const say = (text: string): UIMessage => ({
    id: `u-${Math.random().toString(36).slice(2)}`,
    role: "user",
    parts: [{ type: "text", text }],
  });
  /** Sends `messages` as useChat does; the chunks as they came, with when each came. */
  const send = async (token: string, chatId: string, messages: UIMessage[], messageId?: string) => {
    const stream = await transport(token).sendMessages({
      chatId,
      messages,
      trigger: "submit-message",
      messageId,
      abortSignal: undefined,
    });
    const chunks: { chunk: UIMessageChunk; at: number }[] = [];
    const [mine, theirs] = stream.tee();
    const built = (async () => {
      let last: UIMessage | undefined;
      const last0 = messages.at(-1);
      for await (const m of readUIMessageStream({
        stream: theirs,
        ...(last0?.role === "assistant" ? { message: last0 } : {}),
      })) {
        last = m;
      }
      return last;
    })();
    for await (const chunk of mine) chunks.push({ chunk, at: performance.now() });
    const message = await built;
    if (message === undefined) throw new Error("the stream built no message");
    return { chunks, message };
  };
  const textOf = (m: UIMessage) => m.parts.map((p) => (p.type === "text" ? p.text : "")).join("");

  describe("the protocols of frontends and other agents", () => {
    it("refuses /api/chat, /ag-ui and /mcp without a valid token (401)", async () => {
      for (const route of PROTECTED) {
        for (const token of [null, "not.a.jwt"]) {
          const res = await fetch(`${app().url}${route.path}`, {
            method: route.method,
            headers: {
              ...(route.body === undefined ? {} : JSON_TYPE),
              accept: "application/json, text/event-stream",
              ...(token === null ? {} : { authorization: `Bearer ${token}` }),
            },
            ...(route.body === undefined ? {} : { body: JSON.stringify(route.body) }),
          });
          expect({ ...route, token, status: res.status }).toMatchObject({ status: 401 });
          const body = (await res.json()) as { error: { code: string } };
          expect(body.error.code).toBe("UNAUTHENTICATED");
        }
      }
    });

    it("streams /api/chat to useChat's transport as the words come; 204 when idle", async () => {
      const token = await tokenFor("proto-ann");
      const idle = await fetch(`${app().url}/api/chat/story-1/stream`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(idle.status).toBe(204);
      const { chunks, message } = await send(token, "story-1", [say("Tell me a story")]);
      const deltas = chunks.filter((c) => c.chunk.type === "text-delta");
      // story_agent's words, one by one (40 ms apart), not the answer in one piece at the end.
      expect(deltas.length).toBeGreaterThan(5);
      expect(deltas.at(-1)!.at - deltas[0]!.at).toBeGreaterThan(150);
      expect(textOf(message)).toMatch(/^Once upon a time an agent answered every request/);
      expect(message.metadata).toMatchObject({ status: "succeeded" });
      expect(chunks.map((c) => c.chunk.type)).toContain("finish");
      const after = await fetch(`${app().url}/api/chat/story-1/stream`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(after.status).toBe(204);
    });

    it("shows a booking as a tool call its user approves in the chat, then books it", async () => {
      const token = await tokenFor("proto-ben");
      const ask = say("Book a flight to Lisbon");
      const first = await send(token, "book-1", [ask]);
      const parts = first.message.parts;
      expect(parts.filter((p) => p.type === "tool-search_flights")).toEqual([
        expect.objectContaining({ state: "output-available" }),
      ]);
      const booking = parts.find((p) => p.type === "tool-book_flight");
      expect(booking).toMatchObject({
        state: "approval-requested",
        input: { flight: "NV101", to: "Lisbon" },
      });
      expect(first.message.metadata).toMatchObject({ status: "paused" });
      // The answer, as useChat's addToolApprovalResponse leaves the message and sends it.
      const approved = {
        ...first.message,
        parts: parts.map((p) =>
          p === booking
            ? {
                ...p,
                state: "approval-responded",
                approval: { id: (p as { approval: { id: string } }).approval.id, approved: true },
              }
            : p,
        ),
      } as UIMessage;
      const done = await send(token, "book-1", [ask, approved], approved.id);
      const after = done.message.parts;
      expect(after.filter((p) => p.type === "tool-search_flights")).toHaveLength(1);
      expect(after.filter((p) => p.type === "tool-book_flight")).toEqual([
        expect.objectContaining({
          state: "output-available",
          output: { flight: "NV101", to: "Lisbon", reference: "BK-NV101-LISBON" },
        }),
      ]);
      expect(textOf(done.message)).toBe(
        "Booked NV101 to Lisbon. Your reference is BK-NV101-LISBON.",
      );
      expect(done.message.metadata).toMatchObject({ status: "succeeded" });
    });

    it("answers /ag-ui to @ag-ui/client's HttpAgent, with the session's earlier turns", async () => {
      const token = await tokenFor("proto-cat");
      const agent = (text: string) =>
        new HttpAgent({
          url: `${app().url}/ag-ui`,
          headers: { authorization: `Bearer ${token}` },
          initialMessages: [{ id: `m-${Math.random()}`, role: "user", content: text }],
        });
      const first = await agent("echo my seat is 12A").runAgent();
      expect(first.newMessages).toEqual([
        expect.objectContaining({
          role: "assistant",
          content: "proto-cat, you said: echo my seat is 12A",
        }),
      ]);
      // history: "memory": the orchestrator remembers the session's turns, not the client.
      const second = await agent("what did I say earlier?").runAgent();
      expect(String(second.result)).toContain('"echo my seat is 12A"');
    });

    it("serves flight_agent, echo_agent and concierge_agent on /mcp to the SDK's Client", async () => {
      const token = await tokenFor("proto-dan");
      const client = new Client({ name: "example-suite", version: "1.0.0" });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${app().url}/mcp`), {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
        }),
      );
      try {
        const { tools } = await client.listTools();
        expect(tools.map((t) => t.name)).toEqual(["flight_agent", "echo_agent", "concierge_agent"]);
        const echo = await client.callTool({ name: "echo_agent", arguments: { message: "hi" } });
        expect(echo.content).toEqual([{ type: "text", text: "proto-dan, you said: hi" }]);
        const flights = await client.callTool({
          name: "flight_agent",
          arguments: { message: "Find me a flight to Oslo" },
        });
        expect(flights.isError).toBeFalsy();
        expect(flights.content).toEqual([
          {
            type: "text",
            text: "Flights to Oslo: NV101 to Oslo at 08:15; NV205 to Oslo at 17:40.",
          },
        ]);
      } finally {
        await client.close();
      }
    });
  });
}
