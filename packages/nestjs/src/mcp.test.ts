// Agents served as MCP tools from a Nest controller (`@All("mcp")` with `@Res()` and
// `chatResponse`), on the Express and the Fastify platform, driven by the MCP SDK's own Client over
// Streamable HTTP. Identity comes from the app's own `resolve`, like any route; a tool the caller
// may not use is not listed, and a call is a whole request of the orchestrator.
import "reflect-metadata";
import type { AddressInfo } from "node:net";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { InProcessRuntime, Orchestrator, type ExecContext } from "@nerva/core";
import { createMcpHandler, type McpHandler } from "@nerva/core/mcp-server";
import { All, Controller, Inject, Module, Req, Res, type INestApplication } from "@nestjs/common";
import { ExpressAdapter } from "@nestjs/platform-express";
import { FastifyAdapter } from "@nestjs/platform-fastify";
import { Test } from "@nestjs/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NervaCtx, NervaModule, chatResponse } from "./index.js";

const MCP = Symbol("MCP");

@Controller("mcp")
class McpController {
  constructor(@Inject(MCP) private readonly mcp: McpHandler) {}

  @All()
  async serve(
    @Req() req: { raw?: unknown; body?: unknown },
    @NervaCtx() ctx: ExecContext,
    @Res() res: unknown,
  ) {
    const { res: raw, beforeWrite } = chatResponse(res);
    beforeWrite();
    // Fastify's request wraps Node's in `raw`; Express's is Node's own.
    await this.mcp.handle((req.raw ?? req) as never, raw, ctx, req.body);
  }
}

describe.each(["express", "fastify"] as const)(
  "MCP tools in a Nest controller (%s)",
  (platform) => {
    let app: INestApplication;
    let mcp: McpHandler;
    let url: URL;
    const clients: Client[] = [];

    beforeAll(async () => {
      const runtime = new InProcessRuntime();
      runtime.register("echo", async (input, ctx) => `${ctx.userId}: ${input.message}`);
      runtime.register("admin_report", async () => "secret report");
      mcp = createMcpHandler({
        orchestrator: new Orchestrator({ runtime }),
        agents: ["echo", "admin_report"],
      });

      @Module({
        imports: [
          NervaModule.forRoot({
            // The app's own auth, in a test stand-in: the user and their agents from headers.
            resolve: (req) => ({
              userId: (req.headers["x-test-user"] as string | undefined) ?? null,
              allowedAgents: req.headers["x-test-admin"] === "yes" ? null : ["echo"],
            }),
          }),
        ],
        controllers: [McpController],
        providers: [{ provide: MCP, useValue: mcp }],
      })
      class AppModule {}

      const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
      app = moduleRef.createNestApplication(
        platform === "express" ? new ExpressAdapter() : new FastifyAdapter(),
        { logger: false },
      );
      await app.listen(0, "127.0.0.1");
      url = new URL(`http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}/mcp`);
    });
    afterAll(async () => {
      for (const c of clients) await c.close();
      await mcp.close();
      await app.close();
    });

    const connect = async (headers: Record<string, string>): Promise<Client> => {
      const client = new Client({ name: "nest-test", version: "1" });
      await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
      clients.push(client);
      return client;
    };

    it("lists only the tools the caller may use and answers as the caller", async () => {
      const ada = await connect({ "x-test-user": "ada" });
      expect((await ada.listTools()).tools.map((t) => t.name)).toEqual(["echo"]);
      expect(await ada.callTool({ name: "echo", arguments: { message: "hi" } })).toMatchObject({
        content: [{ type: "text", text: "ada: hi" }],
        isError: false,
      });
      // A tool ada may not use reads as unknown, and nothing runs.
      await expect(
        ada.callTool({ name: "admin_report", arguments: { message: "x" } }),
      ).rejects.toThrow(/Unknown tool "admin_report"/);

      const root = await connect({ "x-test-user": "root", "x-test-admin": "yes" });
      expect((await root.listTools()).tools.map((t) => t.name).sort()).toEqual([
        "admin_report",
        "echo",
      ]);
      expect(
        await root.callTool({ name: "admin_report", arguments: { message: "x" } }),
      ).toMatchObject({ content: [{ text: "secret report" }] });
    });
  },
);
