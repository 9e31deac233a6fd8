// A chat app for the useChat tests: Express, nervaMiddleware with a test identity header, the
// chat routes on a queue, a Runner executing a scripted agent that streams, calls a tool and
// spends tokens, and waits at a gate the test opens (to cut a connection mid-answer).
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import {
  FunctionToolManager,
  InProcessRuntime,
  Orchestrator,
  RunQueue,
  Runner,
  defineTool,
  type RunStore,
} from "@nerva/core";
import { createChatRoutes } from "@nerva/core/ui-stream";
import express from "express";
import { z } from "zod";
import { nervaChat, nervaErrorHandler, nervaMiddleware } from "./index.js";

export const TOKENS = ["Once", " upon", " a", " time", ", the", " end."];

export interface ChatApp {
  readonly url: string;
  readonly queue: RunQueue;
  /** Opens the gate the `slow` answer waits at after its third token. */
  open(): void;
  close(): Promise<void>;
}

export async function startChatApp(
  store: RunStore,
  history: "client" | "memory" = "client",
): Promise<ChatApp> {
  const queue = new RunQueue({ store, name: "chat", retry: { maxAttempts: 1 } });
  const tools = new FunctionToolManager().register(
    defineTool({
      name: "get_weather",
      description: "The weather in a city",
      parameters: z.object({ city: z.string() }),
      run: async ({ city }) => ({ city, sky: "sunny" }),
    }),
  );
  let open: () => void = () => undefined;
  let gate = new Promise<void>((resolve) => (open = resolve));
  const runtime = new InProcessRuntime();
  const orchestrator = new Orchestrator({ tools, runtime });
  const agent = orchestrator.handler(async function* (input, ctx, kit) {
    if (input.message === "boom") throw new Error("ECONNREFUSED /var/run/secret-db.sock");
    if (input.message === "weather") {
      yield "Let me look.";
      const found = await kit.tools.call("get_weather", { city: "Oslo" });
      yield ` It is ${String((found.output as { sky: string }).sky)}.`;
      ctx.recordTokens({ promptTokens: 12, completionTokens: 7, costUsd: 0.001 });
      return;
    }
    if (input.message === "history") {
      yield input.history.map((h) => `${h.role}:${h.content}`).join("|");
      return;
    }
    for (const [i, token] of TOKENS.entries()) {
      if (i === 3 && input.message === "slow") await gate;
      yield token;
    }
  });
  runtime.register("chat_agent", agent);
  const runner = new Runner({ queue, runtime, heartbeatSeconds: 1, leaseSeconds: 5 });
  await runner.start();

  const app = express();
  app.use(
    nervaMiddleware({
      resolve: (req) => ({
        userId: req.get("x-test-user") ?? null,
        allowedAgents: null,
        allowedTools: null,
      }),
    }),
  );
  app.use(express.json());
  app.use(nervaChat(createChatRoutes({ queue, handler: "chat_agent", history })));
  app.use(nervaErrorHandler());
  const server = http.createServer(app);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    queue,
    open: () => {
      open();
      gate = new Promise<void>((resolve) => (open = resolve));
    },
    close: async () => {
      server.closeAllConnections();
      server.close();
      await runner.stop({ graceSeconds: 1 });
      await store.close();
    },
  };
}

/** The `id:` and parsed `data:` of each event of a raw UI message stream response. */
export async function* sseEvents(res: Response): AsyncGenerator<{ id?: number; data: unknown }> {
  const reader = (res.body as ReadableStream<Uint8Array>)
    .pipeThrough(new TextDecoderStream())
    .getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end: number;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const id = /^id: (\d+)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (data === undefined) continue;
      yield {
        ...(id === undefined ? {} : { id: Number(id) }),
        data: data === "[DONE]" ? data : JSON.parse(data),
      };
    }
  }
}
