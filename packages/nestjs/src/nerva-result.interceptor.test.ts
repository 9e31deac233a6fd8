// Routes returning an agent's answer get the statuses the other bridges answer with
// (httpStatusOfResult), on both platforms, over real HTTP.
import "reflect-metadata";
import type { AddressInfo } from "node:net";
import { ExecContext, InProcessRuntime, Orchestrator, RuleRouter } from "@nerva/core";
import { Body, Controller, HttpCode, Module, Post, type INestApplication } from "@nestjs/common";
import { ExpressAdapter } from "@nestjs/platform-express";
import { FastifyAdapter } from "@nestjs/platform-fastify";
import { Test } from "@nestjs/testing";
import { afterEach, describe, expect, it } from "vitest";
import { InjectOrchestrator, NervaCtx, NervaModule } from "./index.js";

function orchestrator(): Orchestrator {
  const runtime = new InProcessRuntime({ timeoutSeconds: 5, circuitBreaker: false });
  runtime.register("echo", async (input) => `echo: ${input.message}`);
  runtime.register("crasher", async () => {
    throw new Error("connect ECONNREFUSED 127.0.0.1:11434");
  });
  runtime.register("slow", async (_input, ctx) => {
    await new Promise((r) => ctx.signal.addEventListener("abort", r));
    return "late";
  });
  return new Orchestrator({
    runtime,
    router: new RuleRouter({
      rules: [
        { handler: "crasher", keywords: ["crash"] },
        { handler: "slow", keywords: ["slow"] },
      ],
      defaultHandler: "echo",
    }),
  });
}

@Controller()
class ChatController {
  constructor(@InjectOrchestrator() private readonly orchestrator: Orchestrator) {}

  @Post("chat")
  chat(@Body() body: { message: string }, @NervaCtx() ctx: ExecContext) {
    return this.orchestrator.handle(body.message, ctx);
  }

  @Post("chat/created")
  @HttpCode(201)
  created(@Body() body: { message: string }, @NervaCtx() ctx: ExecContext) {
    return this.orchestrator.handle(body.message, ctx);
  }

  @Post("other")
  other() {
    return { status: "error", note: "not an agent's answer" };
  }
}

const apps: INestApplication[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});

async function start(platform: "express" | "fastify", resultStatus?: boolean): Promise<string> {
  @Module({
    imports: [
      NervaModule.forRoot({
        orchestrator: orchestrator(),
        timeoutSeconds: 0.5,
        anonymousPermissions: { allowedAgents: ["echo", "crasher", "slow"] },
        logger: false,
        ...(resultStatus === undefined ? {} : { resultStatus }),
      }),
    ],
    controllers: [ChatController],
  })
  class AppModule {}
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
  const app = moduleRef.createNestApplication(
    platform === "express" ? new ExpressAdapter() : new FastifyAdapter(),
    { logger: false },
  );
  apps.push(app);
  await app.listen(0, "127.0.0.1");
  return `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
}

const post = (url: string, message?: string) =>
  fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(message === undefined ? {} : { message }),
  });

describe.each(["express", "fastify"] as const)("NervaResultInterceptor on %s", (platform) => {
  it("answers 200 for a success, 502 for a failed agent, 504 for its timeout", async () => {
    const url = await start(platform);
    const ok = await post(`${url}/chat`, "hello");
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ status: "success", text: "echo: hello" });
    const failed = await post(`${url}/chat`, "crash please");
    expect(failed.status).toBe(502);
    const body = await failed.text();
    expect(body).toContain('"status":"error"');
    expect(body).not.toContain("ECONNREFUSED");
    const late = await post(`${url}/chat`, "slow please");
    expect(late.status).toBe(504);
    await late.text();
  });

  it("keeps a route's own @HttpCode and leaves other answers alone", async () => {
    const url = await start(platform);
    const failed = await post(`${url}/chat/created`, "crash please");
    expect(failed.status).toBe(201);
    await failed.text();
    const other = await post(`${url}/other`);
    expect(other.status).toBe(201);
    expect(await other.json()).toEqual({ status: "error", note: "not an agent's answer" });
  });

  it("resultStatus: false leaves Nest's own statuses", async () => {
    const url = await start(platform, false);
    const failed = await post(`${url}/chat`, "crash please");
    expect(failed.status).toBe(201);
    await failed.text();
  });
});
