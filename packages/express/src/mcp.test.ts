// Agents served as MCP tools, mounted on Express behind the app's own JWT auth, driven by the
// SDK's own Client over Streamable HTTP. What the tests rely on, read in @modelcontextprotocol/sdk
// 1.32.2 (dist/esm):
// - shared/protocol.js `request()`: an `onprogress` option sets `_meta.progressToken` (the message
//   id); an aborted `signal` sends `notifications/cancelled` with that request id.
// - shared/protocol.js `_oncancel`: the server aborts the AbortController it made for the request,
//   which is `extra.signal` in the tool handler; `extra.sendNotification` is a no-op after that.
// - server/webStandardStreamableHttp.js: `req.auth` becomes `extra.authInfo`; a session id the
//   transport does not know is 404, which the handler also answers for another user's session.
import { execFile } from "node:child_process";
import { createHmac, timingSafeEqual } from "node:crypto";
import { once } from "node:events";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, NervaError, Orchestrator } from "@nerva/core";
import { createMcpHandler } from "@nerva/core/mcp-server";
import { InProcessRuntime } from "@nerva/core/runtime";
import express from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { nervaErrorHandler, nervaMiddleware } from "./index.js";

// A minimal HS256 JWT, as an identity provider would issue: { sub, roles }.
const SECRET = "test-secret-of-this-file";
const b64 = (v: string | Buffer) => Buffer.from(v).toString("base64url");
function mint(sub: string, roles: string[]): string {
  const head = `${b64(JSON.stringify({ alg: "HS256", typ: "JWT" }))}.${b64(JSON.stringify({ sub, roles }))}`;
  return `${head}.${b64(createHmac("sha256", SECRET).update(head).digest())}`;
}
function verify(token: string): { sub: string; roles: string[] } {
  const [h, p, sig] = token.split(".");
  const want = createHmac("sha256", SECRET).update(`${h}.${p}`).digest();
  const got = Buffer.from(sig ?? "", "base64url");
  if (got.length !== want.length || !timingSafeEqual(got, want)) throw new Error("bad signature");
  return JSON.parse(Buffer.from(p ?? "", "base64url").toString()) as {
    sub: string;
    roles: string[];
  };
}

const calls: Record<string, number> = {};
let slowStarted: () => void = () => {};
let slowAbortedAt = 0;
const runtime = new InProcessRuntime();
runtime.register("echo", async (input) => {
  calls.echo = (calls.echo ?? 0) + 1;
  return `Echo: ${input.message}${input.args.lang ? ` (${input.args.lang})` : ""}`;
});
runtime.register("words", async function* (input) {
  for (const w of input.message.split(" ")) {
    await new Promise((r) => setTimeout(r, 5));
    yield w;
  }
});
runtime.register("admin_report", async () => {
  calls.admin_report = (calls.admin_report ?? 0) + 1;
  return "secret report";
});
runtime.register("slow", async (_input, ctx) => {
  slowStarted();
  await new Promise<void>((resolve) =>
    ctx.signal.addEventListener("abort", () => {
      slowAbortedAt = performance.now();
      resolve();
    }),
  );
  return "stopped";
});
const orchestrator = new Orchestrator({ runtime });

let server: Server;
let url: URL;
const open: Client[] = [];

beforeAll(async () => {
  const mcp = createMcpHandler({
    orchestrator,
    agents: ["echo", "words", { name: "admin_report", description: "Admins only" }, "slow"],
  });
  const app = express();
  app.use(
    nervaMiddleware({
      requireAuth: true,
      // Members may use the everyday agents; admins every agent.
      resolve: (req) => {
        const user = (req as { user?: { sub: string; roles: string[] } }).user;
        if (user === undefined) return null;
        const admin = user.roles.includes("admin");
        return {
          userId: user.sub,
          roles: user.roles,
          allowedAgents: admin ? null : ["echo", "words", "slow"],
        };
      },
    }),
  );
  app.use(express.json({ limit: "1mb" }));
  app.use((req, _res, next) => {
    const token = /^Bearer (.+)$/.exec(req.get("authorization") ?? "")?.[1];
    try {
      if (token === undefined) throw new Error("no bearer token");
      (req as { user?: unknown }).user = verify(token);
      next();
    } catch {
      next(new NervaError(ErrorCode.UNAUTHENTICATED, "Invalid or missing token."));
    }
  });
  app.all("/mcp", (req, res, next) => mcp.handle(req, res, req.nervaCtx, req.body).catch(next));
  app.use(nervaErrorHandler());
  server = app.listen(0, "127.0.0.1");
  await once(server, "listening");
  url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`);
});

afterAll(async () => {
  await Promise.all(open.map((c) => c.close()));
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

async function connect(user: string, roles: string[]): Promise<Client> {
  const client = new Client({ name: "mcp-test", version: "1.0.0" });
  const headers = { authorization: `Bearer ${mint(user, roles)}` };
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
  open.push(client);
  return client;
}

describe("agents as MCP tools over Streamable HTTP (Express)", () => {
  it("lists only the tools the caller's permissions allow", async () => {
    const alice = await connect("alice", ["member"]);
    const bob = await connect("bob", ["admin"]);
    const names = async (c: Client) => (await c.listTools()).tools.map((t) => t.name).sort();
    expect(await names(alice)).toEqual(["echo", "slow", "words"]);
    expect(await names(bob)).toEqual(["admin_report", "echo", "slow", "words"]);
    const tool = (await bob.listTools()).tools.find((t) => t.name === "admin_report");
    expect(tool).toMatchObject({
      description: "Admins only",
      inputSchema: { required: ["message"] },
    });
  });

  it("calls an agent: its answer as text, status and data as structured content", async () => {
    const alice = await connect("alice", ["member"]);
    const result = await alice.callTool({
      name: "echo",
      arguments: { message: "hi", args: { lang: "fr" } },
    });
    expect(result).toMatchObject({
      content: [{ type: "text", text: "Echo: hi (fr)" }],
      structuredContent: { status: "success", handler: "echo", data: {} },
      isError: false,
    });
  });

  it("refuses a tool the caller may not use as an MCP error, and runs nothing", async () => {
    const alice = await connect("alice", ["member"]);
    const before = calls.admin_report ?? 0;
    await expect(
      alice.callTool({ name: "admin_report", arguments: { message: "x" } }),
    ).rejects.toMatchObject({
      code: -32602,
      message: expect.stringMatching(/Unknown tool "admin_report"/),
    });
    expect(calls.admin_report ?? 0).toBe(before);
    const bob = await connect("bob", ["admin"]);
    expect(await bob.callTool({ name: "admin_report", arguments: { message: "x" } })).toMatchObject(
      {
        content: [{ text: "secret report" }],
      },
    );
  });

  it("answers a bad argument with an error naming the field, before anything runs", async () => {
    const alice = await connect("alice", ["member"]);
    const before = calls.echo ?? 0;
    const bad = alice.callTool({ name: "echo", arguments: { message: 5 } });
    await expect(bad).rejects.toMatchObject({
      code: -32602,
      message: expect.stringMatching(/arguments\.message: .*Pass \{ message: string/),
      data: { code: "INVALID_INPUT" },
    });
    await expect(
      alice.callTool({ name: "echo", arguments: { message: "x", extra: 1 } }),
    ).rejects.toMatchObject({
      message: expect.stringMatching(/Unrecognized key.*extra/),
    });
    expect(calls.echo ?? 0).toBe(before);
  });

  it("turns streamed chunks into progress notifications, in order, when the client asks", async () => {
    const alice = await connect("alice", ["member"]);
    const seen: { progress: number; message?: string | undefined }[] = [];
    const result = await alice.callTool(
      { name: "words", arguments: { message: "one two three" } },
      undefined,
      {
        onprogress: (p) => seen.push({ progress: p.progress, message: p.message }),
      },
    );
    expect(seen).toEqual([
      { progress: 1, message: "one" },
      { progress: 2, message: "two" },
      { progress: 3, message: "three" },
    ]);
    expect(result).toMatchObject({ content: [{ text: "onetwothree" }] });
  });

  it("cancels the run when the client cancels: the handler's signal fires within 100 ms", async () => {
    const alice = await connect("alice", ["member"]);
    const started = new Promise<void>((r) => (slowStarted = r));
    const abort = new AbortController();
    const call = alice.callTool({ name: "slow", arguments: { message: "wait" } }, undefined, {
      signal: abort.signal,
    });
    call.catch(() => {});
    await started;
    slowAbortedAt = 0;
    const cancelledAt = performance.now();
    abort.abort("user pressed stop");
    await expect(call).rejects.toThrow();
    const deadline = cancelledAt + 1000;
    while (slowAbortedAt === 0 && performance.now() < deadline)
      await new Promise((r) => setTimeout(r, 5));
    expect(slowAbortedAt).toBeGreaterThan(0);
    expect(slowAbortedAt - cancelledAt).toBeLessThan(100);
  });

  it("answers 401 to an unauthenticated caller, and 404 to another user's session id", async () => {
    const init = {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "x", version: "1" },
      },
    };
    const post = (headers: Record<string, string>, body: unknown = init) =>
      fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          ...headers,
        },
        body: JSON.stringify(body),
      });
    const anonymous = await post({});
    expect(anonymous.status).toBe(401);
    expect((await anonymous.json()) as unknown).toMatchObject({
      error: { code: "UNAUTHENTICATED" },
    });
    const anonymousClient = new Client({ name: "anon", version: "1" });
    await expect(anonymousClient.connect(new StreamableHTTPClientTransport(url))).rejects.toThrow(
      /401|Unauthorized|Invalid or missing token/,
    );

    const opened = await post({ authorization: `Bearer ${mint("alice", ["member"])}` });
    expect(opened.status).toBe(200);
    const sid = opened.headers.get("mcp-session-id");
    await opened.body?.cancel();
    expect(sid).toMatch(/^[0-9a-f-]{36}$/);
    const list = { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} };
    const stolen = await post(
      { authorization: `Bearer ${mint("mallory", ["admin"])}`, "mcp-session-id": sid as string },
      list,
    );
    expect(stolen.status).toBe(404);
  });
});

// The MCP Inspector's CLI mode (@modelcontextprotocol/inspector 0.17.2, the last line that runs on
// Node 20), as a person would run it against the endpoint: `mcp-inspector --cli <url> --method ...
// --header "Authorization: Bearer ..."`. It prints the JSON-RPC result on stdout.
describe("the MCP Inspector's CLI against the endpoint", () => {
  const inspector = fileURLToPath(new URL("../node_modules/.bin/mcp-inspector", import.meta.url));
  const run = (args: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(
        inspector,
        ["--cli", url.href, "--transport", "http", ...args],
        { timeout: 60_000 },
        (err, stdout, stderr) =>
          resolve({
            code: err === null ? 0 : Number((err as { code?: unknown }).code ?? 1),
            stdout,
            stderr,
          }),
      );
    });
  const bearer = (user: string, roles: string[]) => [
    "--header",
    `Authorization: Bearer ${mint(user, roles)}`,
  ];

  it("lists the caller's tools and calls one, as the caller", async () => {
    const listed = await run(["--method", "tools/list", ...bearer("alice", ["member"])]);
    expect(listed.code, listed.stderr).toBe(0);
    const tools = (JSON.parse(listed.stdout) as { tools: { name: string }[] }).tools;
    expect(tools.map((t) => t.name).sort()).toEqual(["echo", "slow", "words"]);

    const called = await run([
      "--method",
      "tools/call",
      "--tool-name",
      "echo",
      "--tool-arg",
      "message=from the inspector",
      ...bearer("alice", ["member"]),
    ]);
    expect(called.code, called.stderr).toBe(0);
    expect(JSON.parse(called.stdout)).toMatchObject({
      content: [{ type: "text", text: "Echo: from the inspector" }],
      isError: false,
    });
  }, 120_000);

  it("is refused without a token", async () => {
    const refused = await run(["--method", "tools/list"]);
    expect(refused.code).not.toBe(0);
    expect(refused.stdout + refused.stderr).toMatch(
      /401|Unauthorized|UNAUTHENTICATED|Invalid or missing token/i,
    );
  }, 120_000);
});
