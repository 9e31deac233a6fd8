// useChat's own client (the `ai` package's DefaultChatTransport, v6: ui/http-chat-transport.ts
// for the routes and the 204, ui/default-chat-transport.ts for the replay on resume) against the
// chat routes of @nerva/core/ui-stream in a Nest controller through `@Res()` and `chatResponse`,
// on the Express and the Fastify platform. The Express bridge's suite covers the protocol in full.
import "reflect-metadata";
import type { AddressInfo } from "node:net";
import { InMemoryRunStore, RunQueue, Runner, type ExecContext } from "@nerva/core";
import { createChatRoutes, type ChatRoutes } from "@nerva/core/ui-stream";
import {
  Body,
  Controller,
  Get,
  Inject,
  Module,
  Param,
  Post,
  Req,
  Res,
  type INestApplication,
} from "@nestjs/common";
import { ExpressAdapter } from "@nestjs/platform-express";
import { FastifyAdapter } from "@nestjs/platform-fastify";
import { Test } from "@nestjs/testing";
import { DefaultChatTransport, readUIMessageStream, type UIMessage } from "ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NervaCtx, NervaModule, chatResponse } from "./index.js";

const CHAT = Symbol("CHAT");
const TOKENS = ["Nest", " says", " hi"];

@Controller("api/chat")
class ChatController {
  constructor(@Inject(CHAT) private readonly chat: ChatRoutes) {}

  @Post()
  send(@Body() body: unknown, @NervaCtx() ctx: ExecContext, @Res() res: unknown) {
    return this.chat.send({ body, ctx, ...chatResponse(res) });
  }

  @Get(":id/stream")
  resume(
    @Param("id") id: string,
    @Req() req: { headers: Record<string, string> },
    @NervaCtx() ctx: ExecContext,
    @Res() res: unknown,
  ) {
    return this.chat.resume({ chatId: id, ctx, headers: req.headers, ...chatResponse(res) });
  }

  @Post(":id/stop")
  async stop(@Param("id") id: string, @NervaCtx() ctx: ExecContext) {
    const run = await this.chat.stop({ chatId: id, ctx });
    return { runId: run.id, status: run.status };
  }
}

describe.each(["express", "fastify"] as const)(
  "chat routes in a Nest controller (%s)",
  (platform) => {
    let app: INestApplication;
    let runner: Runner;
    let url: string;
    let open: () => void = () => undefined;

    beforeAll(async () => {
      const queue = new RunQueue({ store: new InMemoryRunStore(), name: "chat" });
      const gate = new Promise<void>((resolve) => (open = resolve));
      runner = new Runner({
        queue,
        handlers: {
          chat_agent: async function* (input) {
            for (const [i, token] of TOKENS.entries()) {
              if (i === 1 && input.message === "slow") await gate;
              yield token;
            }
          },
        },
      });
      await runner.start();

      @Module({
        imports: [
          NervaModule.forRoot({
            resolve: (req) => ({
              userId: (req.headers["x-test-user"] as string | undefined) ?? null,
              allowedAgents: null,
            }),
          }),
        ],
        controllers: [ChatController],
        providers: [
          { provide: CHAT, useValue: createChatRoutes({ queue, handler: "chat_agent" }) },
        ],
      })
      class AppModule {}

      const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
      app = moduleRef.createNestApplication(
        platform === "express" ? new ExpressAdapter() : new FastifyAdapter(),
        { logger: false },
      );
      await app.listen(0, "127.0.0.1");
      url = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
    });
    afterAll(async () => {
      await app.close();
      await runner.stop({ graceSeconds: 1 });
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

    it("streams an answer, resumes it after a cut, and answers 204 once it ended", async () => {
      const cut = new AbortController();
      const reader = (await send("slow", `c-${platform}`, cut.signal)).getReader();
      while ((await reader.read()).value?.type !== "text-delta") {
        // Until the first token: the answer then waits at its gate.
      }
      cut.abort();
      await reader.cancel().catch(() => undefined);
      const resumed = await transport().reconnectToStream({ chatId: `c-${platform}` });
      open();
      let last: UIMessage | undefined;
      for await (const m of readUIMessageStream({
        stream: resumed as NonNullable<typeof resumed>,
      })) {
        last = m;
      }
      expect(last?.parts.map((p) => (p.type === "text" ? p.text : "")).join("")).toBe(
        TOKENS.join(""),
      );
      expect(await transport().reconnectToStream({ chatId: `c-${platform}` })).toBeNull();
    });

    it("answers refusals through Nest's filters: 400 naming the field, 401, 404", async () => {
      const bad = await fetch(`${url}/api/chat`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-test-user": "alice" },
        body: JSON.stringify({ id: "x", messages: [], trigger: "submit-message" }),
      });
      expect(bad.status).toBe(400);
      expect(await bad.text()).toContain("body.messages");
      expect((await fetch(`${url}/api/chat/x/stream`)).status).toBe(401);
      const stop = await fetch(`${url}/api/chat/x/stop`, {
        method: "POST",
        headers: { "x-test-user": "alice" },
      });
      expect(stop.status).toBe(404);
    });
  },
);
