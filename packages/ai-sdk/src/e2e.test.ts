// End to end: an Express app's SSE route, orchestrator.stream, modelAgent, the OpenAI-compatible
// provider and the fake server, all real HTTP on 127.0.0.1.
import "./no-network.test-support.js";
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { ExecContext, InProcessRuntime, Orchestrator, RuleRouter } from "@nerva/core";
import { readSSEEvents } from "@nerva/core/testing";
import { nervaErrorHandler, nervaMiddleware, sendSSE } from "@nerva/express";
import express from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createModel, modelAgent } from "./index.js";
import { FakeOpenAIServer } from "./testing/index.js";

let upstream: FakeOpenAIServer;
let server: Server;
let url: string;
let orchestrator: Orchestrator;

beforeAll(async () => {
  upstream = await FakeOpenAIServer.start();
  const model = createModel(
    createOpenAICompatible({ name: "fake", baseURL: upstream.url, includeUsage: true }).chatModel(
      "gpt-4o-mini",
    ),
  );
  const runtime = new InProcessRuntime();
  orchestrator = new Orchestrator({
    router: new RuleRouter({ rules: [], defaultHandler: "concierge" }),
    runtime,
  });
  runtime.register("concierge", orchestrator.handler(modelAgent({ model, tools: false })));
  const app = express();
  app.use(express.json());
  // Anonymous callers may use the concierge (the bridge grants them nothing by default).
  app.use(
    nervaMiddleware({ timeoutSeconds: 30, anonymousPermissions: { allowedAgents: ["concierge"] } }),
  );
  app.post("/chat/stream", (req, res) =>
    sendSSE(res, orchestrator.stream(req.body.message, req.nervaCtx), req.nervaCtx),
  );
  app.use(nervaErrorHandler());
  server = app.listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await upstream.close();
});

describe("a model answer streamed over SSE", () => {
  it("orchestrator.stream yields the deltas the server sent", async () => {
    upstream.enqueue({ chunks: ["Fjords ", "are ", "deep."] });
    const chunks: string[] = [];
    for await (const c of orchestrator.stream("Tell me about fjords", ExecContext.create()))
      chunks.push(c);
    expect(chunks).toEqual(["Fjords ", "are ", "deep."]);
  });

  it("the client's disconnect closes the upstream model request", async () => {
    upstream.enqueue({ text: "word ".repeat(500), chunkDelaySeconds: 0.02 });
    const client = new AbortController();
    const arrived = upstream.nextRequest();
    const res = await fetch(`${url}/chat/stream`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ message: "Count slowly" }),
      signal: client.signal,
    });
    expect(res.status).toBe(200);
    const request = await arrived;
    let received = 0;
    let leftAt = 0;
    try {
      for await (const event of readSSEEvents(res.body!)) {
        if (event.event === "message") received++;
        if (received === 3) {
          leftAt = performance.now();
          client.abort();
          // Events that arrived in the same piece as the third are still parsed: stop here.
          break;
        }
      }
    } catch {
      // the aborted body ends the loop
    }
    const closed = await request.closed;
    expect(received).toBe(3);
    expect(closed.early).toBe(true);
    expect(closed.at - leftAt).toBeLessThan(1_000);
  });
});
