// @ag-ui/client 1.0's own HttpAgent against the AG-UI route on a real Express server (port 0).
// What the tests rely on, read in @ag-ui/client 1.0.0 (src/agent/agent.ts, http.ts,
// src/interrupts): runAgent() POSTs a RunAgentInput (threadId, runId, messages, state, tools,
// context, forwardedProps, resume) with `Accept: text/event-stream`, verifies the event order,
// applies the events to `messages` and `state`, keeps `pendingInterrupts` from a RUN_FINISHED
// with an interrupt outcome, and refuses a next run that does not answer them in `resume`.
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { HttpAgent } from "@ag-ui/client";
import {
  END,
  FunctionToolManager,
  GraphHost,
  InMemoryRunStore,
  InProcessRuntime,
  Orchestrator,
  RunQueue,
  Runner,
  defineGraph,
  defineTool,
  fnNode,
  inputNode,
} from "@nerva/core";
import { createAgUiRoute } from "@nerva/core/ag-ui";
import express from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { nervaAgUi, nervaErrorHandler, nervaMiddleware } from "./index.js";

const State = z.object({ n: z.number().optional(), ok: z.string().optional() });
type State = z.output<typeof State>;

let base = "";
let close: () => Promise<void> = async () => undefined;

beforeAll(async () => {
  const queue = new RunQueue({ store: new InMemoryRunStore(), retry: { maxAttempts: 1 } });
  const tools = new FunctionToolManager().register(
    defineTool({
      name: "get_weather",
      description: "The weather in a city",
      parameters: z.object({ city: z.string() }),
      run: async ({ city }) => ({ city, sky: "sunny" }),
    }),
  );
  const runtime = new InProcessRuntime();
  const orchestrator = new Orchestrator({ tools, runtime });
  runtime.register(
    "agent",
    orchestrator.handler(async function* (input, ctx, kit) {
      if (input.message === "boom") throw new Error("ECONNREFUSED /var/run/secret.sock");
      if (input.message === "weather") {
        const found = await kit.tools.call("get_weather", { city: "Oslo" });
        yield `It is ${String((found.output as { sky: string }).sky)}.`;
        return;
      }
      if (input.message === "ask") {
        const answer = await ctx.run?.waitForInput<string>("confirm", { prompt: "Sure?" });
        yield `You said ${answer}.`;
        return;
      }
      yield "Hello, ";
      yield `${ctx.userId}.`;
    }),
  );
  const runner = new Runner({ queue, runtime });
  await runner.start();
  const graph = new GraphHost({
    queue,
    graph: defineGraph({
      name: "counter",
      state: State,
      nodes: {
        add: fnNode<State>(async (s) => ({ n: (s.n ?? 0) + 1 })),
        check: inputNode<State>({ prompt: "OK?", writes: "ok" }),
      },
      edges: [
        ["add", "check"],
        ["check", END],
      ],
      entry: "add",
    }),
  });
  await graph.start();

  const app = express();
  app.use(
    nervaMiddleware({
      resolve: (req) => ({ userId: req.get("x-test-user") ?? null }),
    }),
  );
  app.use(express.json());
  app.use(nervaAgUi(createAgUiRoute({ queue, handler: "agent" })));
  app.use(nervaAgUi(createAgUiRoute({ queue, graph }), { path: "/ag-ui/graph" }));
  app.use(nervaErrorHandler());
  const server = http.createServer(app);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  close = async () => {
    server.closeAllConnections();
    server.close();
    await graph.stop({ graceSeconds: 0 });
    await runner.stop({ graceSeconds: 0 });
  };
});
afterAll(() => close());

function agentOf(user: string, text: string, path = "/ag-ui"): HttpAgent {
  return new HttpAgent({
    url: `${base}${path}`,
    headers: { "x-test-user": user },
    initialMessages: [{ id: `m-${Math.random()}`, role: "user", content: text }],
  });
}

describe("AG-UI on Express, through @ag-ui/client's HttpAgent", () => {
  it("streams a text answer into the agent's messages", async () => {
    const agent = agentOf("alice", "hi");
    const { newMessages, result } = await agent.runAgent();
    expect(newMessages).toEqual([
      expect.objectContaining({ role: "assistant", content: "Hello, alice." }),
    ]);
    expect(result).toBe("Hello, alice.");
  });

  it("shows a tool call and its result as messages", async () => {
    const agent = agentOf("alice", "weather");
    const { newMessages } = await agent.runAgent();
    const call = newMessages.find((m) => m.role === "assistant" && m.toolCalls !== undefined);
    expect(call).toMatchObject({
      toolCalls: [{ type: "function", function: { name: "get_weather" } }],
    });
    const toolCallId = (call as { toolCalls: { id: string }[] }).toolCalls[0]?.id;
    expect(newMessages).toContainEqual(
      expect.objectContaining({
        role: "tool",
        toolCallId,
        content: '{"city":"Oslo","sky":"sunny"}',
      }),
    );
    expect(newMessages.at(-1)).toMatchObject({ role: "assistant", content: "It is sunny." });
  });

  it("ends a failed run with RUN_ERROR carrying the client-safe text only", async () => {
    const agent = agentOf("alice", "boom");
    const errors: string[] = [];
    agent.subscribe({ onRunErrorEvent: ({ event }) => void errors.push(event.message) });
    await agent.runAgent().catch(() => undefined);
    expect(errors).toEqual(["the agent failed"]);
  });

  it("pauses as an interrupt and continues when the next run resumes it", async () => {
    const agent = agentOf("alice", "ask");
    await agent.runAgent();
    expect(agent.pendingInterrupts).toEqual([
      expect.objectContaining({ reason: "approval", message: "Sure?" }),
    ]);
    const interruptId = agent.pendingInterrupts[0]?.id ?? "";
    const { newMessages } = await agent.runAgent({
      resume: [{ interruptId, status: "resolved", payload: "yes" }],
    });
    expect(newMessages.at(-1)).toMatchObject({ role: "assistant", content: "You said yes." });
    expect(agent.pendingInterrupts).toEqual([]);
  });

  it("refuses another user's answer to an interrupt (404, the run stays paused)", async () => {
    const alice = agentOf("alice", "ask");
    await alice.runAgent();
    const interruptId = alice.pendingInterrupts[0]?.id ?? "";
    const bob = agentOf("bob", "ask");
    await expect(
      bob.runAgent({ resume: [{ interruptId, status: "resolved", payload: "yes" }] }),
    ).rejects.toThrow(/404/);
    const res = await fetch(`${base}/ag-ui`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ threadId: "t", runId: "r", messages: [] }),
    });
    expect(res.status).toBe(401);
    const { newMessages } = await alice.runAgent({
      resume: [{ interruptId, status: "resolved", payload: "ok" }],
    });
    expect(newMessages.at(-1)).toMatchObject({ content: "You said ok." });
  });

  it("keeps a graph's state in the agent's state, through a pause and its resume", async () => {
    const agent = new HttpAgent({
      url: `${base}/ag-ui/graph`,
      headers: { "x-test-user": "alice" },
      initialState: { n: 1 },
    });
    const steps: string[] = [];
    agent.subscribe({ onStepStartedEvent: ({ event }) => void steps.push(event.stepName) });
    await agent.runAgent();
    expect(steps).toEqual(["add", "check"]);
    expect(agent.state).toEqual({ n: 2 });
    expect(agent.pendingInterrupts).toEqual([expect.objectContaining({ message: "OK?" })]);
    const interruptId = agent.pendingInterrupts[0]?.id ?? "";
    await agent.runAgent({ resume: [{ interruptId, status: "resolved", payload: "fine" }] });
    expect(agent.state).toEqual({ n: 2, ok: "fine" });
  });

  it("refuses a body that is not a RunAgentInput with a 400 naming the field", async () => {
    const res = await fetch(`${base}/ag-ui`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-test-user": "alice" },
      body: JSON.stringify({ threadId: "t", messages: [] }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("INVALID_INPUT");
    expect(body.error.message).toMatch(/body\.runId/);
  });
});
