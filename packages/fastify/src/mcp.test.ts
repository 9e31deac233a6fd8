// Agents as MCP tools on Fastify: the core handler on the raw Node request and response (the
// route hijacks the reply, as the SSE helper does), behind @fastify/jwt, driven by the SDK's Client.
import fastifyJwt from "@fastify/jwt";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createMcpHandler } from "@nerva/core/mcp-server";
import { InProcessRuntime } from "@nerva/core/runtime";
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nervaPlugin } from "./index.js";

interface User {
  sub: string;
  agents: string[];
}

let app: FastifyInstance;
let url: URL;
const mcp = (() => {
  const runtime = new InProcessRuntime();
  runtime.register("echo", async (input, ctx) => `${ctx.userId}: ${input.message}`);
  runtime.register("audit", async () => "audit log");
  return createMcpHandler({ runtime, agents: ["echo", "audit"] });
})();

beforeAll(async () => {
  app = Fastify();
  await app.register(fastifyJwt, { secret: "a secret of at least thirty-two bytes" });
  app.addHook("onRequest", async (request) => {
    if (request.headers.authorization !== undefined) await request.jwtVerify();
  });
  await app.register(nervaPlugin, {
    requireAuth: true,
    resolve: (request) => {
      const user = request.user as User | null | undefined;
      return user == null ? null : { userId: user.sub, allowedAgents: user.agents };
    },
  });
  app.all("/mcp", async (request, reply) => {
    const ctx = request.nervaCtx; // 401 here, before the reply is handed to the MCP transport
    reply.hijack();
    await mcp.handle(request.raw, reply.raw, ctx, request.body);
  });
  await app.listen({ port: 0, host: "127.0.0.1" });
  const address = app.server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  url = new URL(`http://127.0.0.1:${address.port}/mcp`);
});

afterAll(async () => {
  await mcp.close();
  await app.close();
});

async function connect(sub: string, agents: string[]): Promise<Client> {
  const token = app.jwt.sign({ sub, agents });
  const client = new Client({ name: "t", version: "1" });
  await client.connect(
    new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}

describe("agents as MCP tools over Streamable HTTP (Fastify)", () => {
  it("lists the tools the caller may use and calls one as that caller", async () => {
    const dana = await connect("dana", ["echo"]);
    expect((await dana.listTools()).tools.map((t) => t.name)).toEqual(["echo"]);
    expect(await dana.callTool({ name: "echo", arguments: { message: "hi" } })).toMatchObject({
      content: [{ type: "text", text: "dana: hi" }],
    });
    await expect(dana.callTool({ name: "audit", arguments: { message: "x" } })).rejects.toThrow(
      /Unknown tool "audit"/,
    );
    await dana.close();
  });

  it("answers 401 to a caller without a token", async () => {
    const res = await fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
    });
    expect(res.status).toBe(401);
  });
});
