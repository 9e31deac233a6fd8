// The chunks follow the AI SDK's UI message stream protocol as the `ai` package (v6.0.326) defines
// it in ui-message-stream/ui-message-chunks.ts (`uiMessageChunkSchema`), with the header of
// ui-message-stream/ui-message-stream-headers.ts and the `[DONE]` end of
// json-to-sse-transform-stream.ts; packages/express/src/chat.test.ts runs the `ai` client itself.
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { Orchestrator } from "../orchestrator/orchestrator.js";
import { InMemoryRunStore } from "../runs/memory/in-memory-store.js";
import { RunQueue } from "../runs/run-queue.js";
import { Runner } from "../runs/runner.js";
import type { RunEvent } from "../runs/types.js";
import { UIChunker } from "./chunks.js";
import { answerEvents } from "../http/answer-events.js";
import { toUIMessageChunks, writeUIMessageStream, type UIStreamMessage } from "./stream.js";

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

/** A finished run of a handler that streams three chunks and spends tokens. */
async function finishedRun(): Promise<{ queue: RunQueue; id: string }> {
  const queue = new RunQueue({ store: new InMemoryRunStore(), retry: { maxAttempts: 1 } });
  const runner = new Runner({
    queue,
    handlers: {
      talk: async function* (_input, ctx) {
        yield "a";
        yield "b";
        ctx.recordTokens({ promptTokens: 3, completionTokens: 2 });
        yield "c";
      },
    },
  });
  await runner.start();
  const run = await queue.enqueue({ handler: "talk", input: { message: "hi" } });
  await queue.wait(run.id, { timeoutSeconds: 10 });
  await runner.stop();
  return { queue, id: run.id };
}

const types = (ms: readonly UIStreamMessage[]): string[] =>
  ms.map((m) => (typeof m.data === "string" ? m.data : m.data.type));

describe("toUIMessageChunks", () => {
  it("turns a run into start, a step of text, finish with the usage, [DONE]", async () => {
    const { queue, id } = await finishedRun();
    const events = await collect(queue.events(id));
    expect(events.at(-1)).toMatchObject({
      type: "run.succeeded",
      data: { usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5, cost_usd: 0 } },
    });
    const ms = await collect(toUIMessageChunks(queue.events(id), { runId: id }));
    expect(types(ms)).toEqual([
      "start",
      "start-step",
      "text-start",
      "text-delta",
      "text-delta",
      "text-delta",
      "text-end",
      "finish-step",
      "finish",
      "[DONE]",
    ]);
    expect(ms[0]?.data).toEqual({ type: "start", messageId: id });
    expect(ms.at(-2)?.data).toEqual({
      type: "finish",
      finishReason: "stop",
      messageMetadata: {
        runId: id,
        status: "succeeded",
        usage: { promptTokens: 3, completionTokens: 2, totalTokens: 5, costUsd: 0 },
      },
    });
    // Each event's last chunk carries its seq; ids only grow.
    const ids = ms.flatMap((m) => (m.id === undefined ? [] : [m.id]));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(ids.at(-1)).toBe(events.at(-1)?.seq);
  });

  it("resumed after any event's id, gives exactly the chunks after it", async () => {
    const { queue, id } = await finishedRun();
    const full = await collect(toUIMessageChunks(queue.events(id), { runId: id }));
    for (const [index, m] of full.entries()) {
      if (m.id === undefined) continue;
      const tail = await collect(
        toUIMessageChunks(queue.events(id), { runId: id, afterSeq: m.id }),
      );
      expect(tail).toEqual([full[0], ...full.slice(index + 1)]);
    }
  });

  it("ends a source that fails with client-safe text and [DONE]", async () => {
    async function* failing(): AsyncGenerator<RunEvent> {
      yield { runId: "r", seq: 1, type: "run.started", at: 0, attempt: 1, data: {} };
      throw new Error("ECONNRESET 10.0.0.7:5432");
    }
    const ms = await collect(toUIMessageChunks(failing(), { runId: "r" }));
    expect(types(ms)).toEqual(["start", "start-step", "error", "[DONE]"]);
    expect(JSON.stringify(ms)).not.toContain("10.0.0.7");
  });
});

describe("UIChunker", () => {
  const at = 1;
  const ev = (seq: number, type: string, data: RunEvent["data"] = {}): RunEvent => ({
    runId: "r",
    seq,
    type,
    at,
    attempt: 1,
    data,
  });

  it("shows nodes as data parts", () => {
    const c = new UIChunker("r");
    const chunks = [
      ev(1, "run.started", { workerId: "w", fence: 1 }),
      ev(2, "node.started", { node: "review", visit: 1, key: "review" }),
      ev(3, "output.delta", { chunk: "checking" }),
      ev(4, "node.completed", { node: "review", visit: 1, key: "review" }),
    ].flatMap((e) => [...c.push(e)]);
    expect(chunks.map((x) => x.type)).toEqual([
      "start-step",
      "data-nerva-node-started",
      "text-start",
      "text-delta",
      "text-end",
      "data-nerva-node-completed",
    ]);
    expect(chunks[1]).toMatchObject({ id: "2", data: { node: "review", seq: 2 } });
  });

  it("pairs tool calls without call ids by tool, and hides a failed call's error text", () => {
    const c = new UIChunker("r");
    const chunks = [
      ev(1, "tool.started", { node: "n", tool: "search" }),
      ev(2, "tool.completed", { node: "n", tool: "search", status: "error", error: "/etc/x" }),
      ev(3, "run.failed", {
        error: { code: "HANDLER_ERROR", message: "at /srv/app.js:3", retriable: false },
      }),
    ].flatMap((e) => [...c.push(e)]);
    expect(chunks).toContainEqual({
      type: "tool-output-error",
      toolCallId: "call-1",
      errorText: "the tool call ended: error",
    });
    expect(chunks).toContainEqual({ type: "error", errorText: "the agent failed" });
    expect(JSON.stringify(chunks)).not.toMatch(/\/etc\/x|\/srv/);
  });
});

describe("a run that pauses for a person", () => {
  it("streams through the pause until the run ends, and replays the same", async () => {
    const queue = new RunQueue({ store: new InMemoryRunStore(), retry: { maxAttempts: 1 } });
    const runner = new Runner({
      queue,
      handlers: {
        refund: async function* (_input, ctx) {
          yield "checking";
          await ctx.run?.waitForInput("approve", { prompt: "Refund 42?" });
          yield " refunded";
        },
      },
    });
    await runner.start();
    const run = await queue.enqueue({ handler: "refund", input: { message: "refund" } });
    await queue.wait(run.id, { until: ["paused"], timeoutSeconds: 10 });
    const live = collect(toUIMessageChunks(queue.events(run.id), { runId: run.id }));
    await queue.resume(run.id, true, { key: "approve" });
    const chunks = (await live).map((m) => m.data);
    await runner.stop();
    const kinds = chunks.map((c) => (typeof c === "string" ? c : c.type));
    expect(kinds).toEqual([
      "start",
      "start-step",
      "text-start",
      "text-delta",
      "text-end",
      "data-nerva-run-paused",
      "finish-step",
      "data-nerva-run-resumed",
      // The handler runs again after the resume: its second execution streams from its start.
      "start-step",
      "text-start",
      "text-delta",
      "text-delta",
      "text-end",
      "finish-step",
      "finish",
      "[DONE]",
    ]);
    expect(chunks[5]).toMatchObject({ data: { prompt: "Refund 42?", kind: "approval" } });
    const replay = await collect(toUIMessageChunks(queue.events(run.id), { runId: run.id }));
    expect(replay.map((m) => m.data)).toEqual(chunks);
  });
});

describe("answerEvents and writeUIMessageStream", () => {
  it("streams a plain request's answer with the protocol's header, ids and [DONE]", async () => {
    const orchestrator = new Orchestrator({
      agents: {
        talk: async function* (_input, ctx) {
          yield "x";
          ctx.recordTokens({ promptTokens: 1, completionTokens: 1 });
          yield "y";
        },
      },
    });
    const server = http.createServer((_req, res) => {
      const ctx = ExecContext.create({ userId: "u" });
      void writeUIMessageStream(res, answerEvents(orchestrator.stream("hi", ctx), ctx), {
        runId: ctx.requestId,
      });
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    try {
      const { port } = server.address() as AddressInfo;
      const res = await fetch(`http://127.0.0.1:${port}/`);
      expect(res.headers.get("x-vercel-ai-ui-message-stream")).toBe("v1");
      expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
      const text = await res.text();
      expect(text.trimEnd().endsWith("data: [DONE]")).toBe(true);
      expect(text).toMatch(/^id: 2$/m);
      const data = [...text.matchAll(/^data: (.*)$/gm)].map((m) => m[1] as string);
      const chunks = data
        .slice(0, -1)
        .map((d) => JSON.parse(d) as { type: string; delta?: string });
      expect(chunks.filter((x) => x.type === "text-delta").map((x) => x.delta)).toEqual(["x", "y"]);
      expect(chunks.at(-1)).toMatchObject({
        type: "finish",
        messageMetadata: { status: "succeeded", usage: { totalTokens: 2 } },
      });
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});

describe("reasoning", () => {
  it("shows a model's reasoning as a reasoning part apart from the answer, through the orchestrator and the run", async () => {
    const queue = new RunQueue({ store: new InMemoryRunStore(), retry: { maxAttempts: 1 } });
    const orchestrator = new Orchestrator({
      agents: {
        thinker: async (_input, ctx) => {
          // What modelAgent does with `reasoning: true` on a sink that keeps reasoning apart.
          await ctx.stream?.pushReasoning?.("Let me think. ");
          await ctx.stream?.pushReasoning?.("Two and two.");
          await ctx.stream?.push("Four.");
          return "Four.";
        },
      },
    });
    const runner = new Runner({
      queue,
      handlers: {
        chat: async (input, ctx) => {
          const r = await orchestrator.handle(input.message, ctx);
          return { status: r.status, output: r.text };
        },
      },
    });
    await runner.start();
    try {
      const run = await queue.enqueue({ handler: "chat", input: { message: "2+2?" } });
      await queue.wait(run.id, { timeoutSeconds: 10 });
      const events = await collect(queue.events(run.id));
      expect(
        events
          .filter((e) => e.type === "output.delta")
          .map((e) => [e.data.kind ?? "text", e.data.chunk]),
      ).toEqual([
        ["reasoning", "Let me think. "],
        ["reasoning", "Two and two."],
        ["text", "Four."],
      ]);
      const chunks = (await collect(toUIMessageChunks(queue.events(run.id), { runId: run.id })))
        .map((m) => m.data)
        .filter((c) => typeof c === "object" && /^(reasoning|text)-/.test(c.type));
      expect(chunks).toEqual([
        { type: "reasoning-start", id: expect.any(String) },
        { type: "reasoning-delta", id: expect.any(String), delta: "Let me think. " },
        { type: "reasoning-delta", id: expect.any(String), delta: "Two and two." },
        { type: "reasoning-end", id: expect.any(String) },
        { type: "text-start", id: expect.any(String) },
        { type: "text-delta", id: expect.any(String), delta: "Four." },
        { type: "text-end", id: expect.any(String) },
      ]);
      // The AI SDK's own reader builds a message with a reasoning part and a text part.
      const { readUIMessageStream } = await import("ai");
      const stream = new ReadableStream({
        async start(controller) {
          for await (const m of toUIMessageChunks(queue.events(run.id), { runId: run.id })) {
            if (typeof m.data === "object") controller.enqueue(m.data);
          }
          controller.close();
        },
      });
      let last: { parts: { type: string; text?: string }[] } | undefined;
      for await (const message of readUIMessageStream({ stream: stream as never })) {
        last = message as never;
      }
      expect(last?.parts.filter((p) => p.type === "reasoning" || p.type === "text")).toEqual([
        expect.objectContaining({ type: "reasoning", text: "Let me think. Two and two." }),
        expect.objectContaining({ type: "text", text: "Four." }),
      ]);
    } finally {
      await runner.stop({ graceSeconds: 0 });
    }
  });
});
