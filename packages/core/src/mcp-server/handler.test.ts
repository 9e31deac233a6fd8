// createMcpHandler on a plain node:http server (no framework, no body parser: the SDK's transport
// reads the body itself), its option checks, its session bound, and its missing-SDK error.
import { execFile } from "node:child_process";
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import { Orchestrator } from "../orchestrator/orchestrator.js";
import type { PolicyAction, PolicyEngine } from "../policy/types.js";
import { DeclarativePolicyEngine } from "../declarative-policy/declarative-engine.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { createMcpHandler, type McpHandler } from "./index.js";

function echoRuntime(): InProcessRuntime {
  const runtime = new InProcessRuntime();
  runtime.register("echo", async (input, ctx) => `${ctx.userId ?? "anonymous"}: ${input.message}`);
  return runtime;
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** Serves `mcp` with the user named in the `x-test-user` header (a test stand-in for real auth). */
async function serve(mcp: McpHandler): Promise<URL> {
  const server: Server = createServer((req, res) => {
    const ctx = ExecContext.create({ userId: String(req.headers["x-test-user"] ?? "") || null });
    mcp.handle(req, res, ctx).catch((err: unknown) => {
      res.statusCode = 500;
      res.end(String((err as Error).message));
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  closers.push(async () => {
    await mcp.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
}

async function connect(url: URL, user: string): Promise<Client> {
  const client = new Client({ name: "t", version: "1" });
  const headers = { "x-test-user": user };
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
  closers.push(() => client.close());
  return client;
}

describe("createMcpHandler", () => {
  it("serves an agent over plain node:http, each call as the requesting user", async () => {
    const url = await serve(createMcpHandler({ runtime: echoRuntime(), agents: ["echo"] }));
    const client = await connect(url, "carol");
    expect(client.getServerVersion()).toEqual({ name: "nerva", version: "0.1.0" });
    expect(await client.callTool({ name: "echo", arguments: { message: "hi" } })).toMatchObject({
      content: [{ type: "text", text: "carol: hi" }],
    });
  });

  it("answers a failed agent with client-safe text, never its operator message", async () => {
    const runtime = new InProcessRuntime();
    runtime.register("broken", async () => {
      throw new Error("ECONNREFUSED /var/run/db.sock");
    });
    const url = await serve(createMcpHandler({ runtime, agents: ["broken"] }));
    const client = await connect(url, "carol");
    const answer = await client.callTool({ name: "broken", arguments: { message: "hi" } });
    expect(answer).toMatchObject({ isError: true, structuredContent: { status: "error" } });
    expect(JSON.stringify(answer)).not.toMatch(/ECONNREFUSED|db\.sock/);
  });

  it("runs each call as a whole request of the orchestrator: its policy is asked before the agent runs, and its refusal answered", async () => {
    const asked: PolicyAction[] = [];
    let ran = 0;
    const runtime = new InProcessRuntime();
    runtime.register("echo", async () => `ran ${++ran}`);
    const policy: PolicyEngine = {
      evaluate: async (action, ctx) => {
        asked.push(action);
        const deny = ctx.userId === "eve";
        return {
          effect: deny ? "deny" : "allow",
          checkpoint: action.checkpoint,
          code: deny ? ErrorCode.POLICY_DENIED : null,
          reason: deny ? "eve may not ask agents" : "",
          rule: deny ? "no-eve" : null,
        };
      },
      charge: async () => {},
    };
    const url = await serve(
      createMcpHandler({ orchestrator: new Orchestrator({ runtime, policy }), agents: ["echo"] }),
    );
    const eve = await connect(url, "eve");
    expect(await eve.callTool({ name: "echo", arguments: { message: "hi" } })).toMatchObject({
      content: [{ type: "text", text: "POLICY_DENIED: eve may not ask agents" }],
      structuredContent: { status: "error", data: { code: "POLICY_DENIED" } },
      isError: true,
    });
    expect(ran).toBe(0);
    // Refused before routing: where per-user rate limits are counted.
    expect(asked).toEqual([{ checkpoint: "before_route", message: "hi" }]);
    const carol = await connect(url, "carol");
    expect(await carol.callTool({ name: "echo", arguments: { message: "hi" } })).toMatchObject({
      content: [{ text: "ran 1" }],
    });
    expect(asked.slice(1)).toEqual([
      { checkpoint: "before_route", message: "hi" },
      { checkpoint: "before_invoke", kind: "agent", name: "echo", message: "hi" },
    ]);
  });

  it("counts rate limits and charges budgets like any request, and answers an approval's id", async () => {
    const runtime = new InProcessRuntime();
    let ran = 0;
    runtime.register("writer", async (input, ctx) => {
      ran++;
      ctx.recordTokens({ promptTokens: 60, completionTokens: 40 });
      return `wrote ${input.args.topic ?? input.message}`;
    });
    runtime.register("refunder", async () => "refunded");
    const policy = new DeclarativePolicyEngine({
      version: 1,
      rateLimits: [{ name: "per-user", per: "user", limit: 3, windowSeconds: 60 }],
      budgets: [{ name: "daily", per: "user", windowSeconds: 86400, maxTokens: 150 }],
      approvals: [
        { name: "refunds", kind: "agent", names: ["refunder"], approverRoles: ["approver"] },
      ],
    });
    const orchestrator = new Orchestrator({ runtime, policy });
    const url = await serve(createMcpHandler({ orchestrator, agents: ["writer", "refunder"] }));
    const dan = await connect(url, "dan");
    const call = (name: string, args?: Record<string, string>) =>
      dan.callTool({ name, arguments: { message: "go", ...(args ? { args } : {}) } });

    // The tool's args reach the agent as input.args; its usage is charged to dan's budget.
    expect(await call("writer", { topic: "tides" })).toMatchObject({
      content: [{ text: "wrote tides" }],
    });
    expect(await call("writer")).toMatchObject({ content: [{ text: "wrote go" }] });
    // 200 of 150 tokens spent: the budget refuses the next call before the agent runs.
    expect(await call("writer")).toMatchObject({
      isError: true,
      structuredContent: { status: "error", data: { code: "BUDGET_EXCEEDED" } },
    });
    expect(ran).toBe(2);
    // Three requests counted: the fourth is over the per-user rate limit, with its retry time.
    const limited = await call("refunder");
    expect(limited).toMatchObject({
      isError: true,
      structuredContent: { data: { code: "RATE_LIMITED", retryAfterSeconds: expect.any(Number) } },
    });

    // Another user: the gated agent does not run, and the answer carries the approval's id.
    const eve = await connect(url, "eve");
    const pending = await eve.callTool({ name: "refunder", arguments: { message: "refund 42" } });
    expect(pending).toMatchObject({
      isError: true,
      structuredContent: { data: { code: "APPROVAL_PENDING", approvalId: expect.any(String) } },
    });
    const { runs } = await policy.approvals.list({ status: "paused" });
    expect(runs.map((r) => r.id)).toEqual([
      (pending.structuredContent as { data: { approvalId: string } }).data.approvalId,
    ]);
  });

  it("keeps at most maxSessions sessions, closing the least recently used", async () => {
    const url = await serve(
      createMcpHandler({ runtime: echoRuntime(), agents: ["echo"], maxSessions: 2 }),
    );
    const a = await connect(url, "a");
    const b = await connect(url, "b");
    await a.listTools(); // a is now the most recently used
    const c = await connect(url, "c");
    await expect(b.listTools()).rejects.toThrow(/404|Session not found/);
    expect((await a.listTools()).tools).toHaveLength(1);
    expect((await c.listTools()).tools).toHaveLength(1);
  });

  it("checks its options before building anything (INVALID_OPTIONS naming the field)", () => {
    const runtime = echoRuntime();
    const pathOf = (fn: () => unknown): string => {
      try {
        fn();
      } catch (err) {
        expect(err).toBeInstanceOf(NervaError);
        expect((err as NervaError).code).toBe(ErrorCode.INVALID_OPTIONS);
        return (err as NervaError).message;
      }
      throw new Error("did not throw");
    };
    expect(pathOf(() => createMcpHandler({ agents: ["echo"] }))).toMatch(
      /options needs exactly one of orchestrator or runtime/,
    );
    expect(pathOf(() => createMcpHandler({ runtime, agents: [] }))).toMatch(/options\.agents must/);
    expect(pathOf(() => createMcpHandler({ runtime, agents: ["nope"] }))).toMatch(
      /options\.agents\[0\] names "nope", which the runtime does not have \(it has: echo\)/,
    );
    expect(pathOf(() => createMcpHandler({ runtime, agents: ["echo", "echo"] }))).toMatch(
      /options\.agents\[1\] names "echo" twice/,
    );
    expect(pathOf(() => createMcpHandler({ runtime, agents: ["a b"] }))).toMatch(
      /options\.agents\[0\] must be a handler name/,
    );
    expect(pathOf(() => createMcpHandler({ runtime, agents: ["echo"], maxSessions: 0 }))).toMatch(
      /options\.maxSessions/,
    );
  });

  it("answers MISSING_DEPENDENCY naming @modelcontextprotocol/sdk when it is not installed", async () => {
    // A child process in which a resolve hook makes the SDK unresolvable, as if not installed.
    const hook = fileURLToPath(
      new URL("../../test/fixtures/register-hide-mcp-sdk.mjs", import.meta.url),
    );
    const entry = fileURLToPath(new URL("./index.ts", import.meta.url));
    const rt = fileURLToPath(new URL("../runtime/in-process-runtime.ts", import.meta.url));
    const cx = fileURLToPath(new URL("../context/exec-context.ts", import.meta.url));
    const script = `
      import { createMcpHandler } from ${JSON.stringify(entry)};
      import { InProcessRuntime } from ${JSON.stringify(rt)};
      import { ExecContext } from ${JSON.stringify(cx)};
      const runtime = new InProcessRuntime();
      runtime.register("echo", async () => "x");
      const mcp = createMcpHandler({ runtime, agents: ["echo"] });
      try { await mcp.handle({ headers: {} }, {}, ExecContext.create()); console.log("handled?!"); }
      catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); }`;
    const out = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        ["--import", "tsx", "--import", hook, "--input-type=module", "-e", script],
        { cwd: fileURLToPath(new URL("../../../..", import.meta.url)), timeout: 30_000 },
        (err, stdout, stderr) =>
          err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout),
      ),
    );
    const reported = JSON.parse(out.trim()) as { code: string; message: string };
    expect(reported.code).toBe(ErrorCode.MISSING_DEPENDENCY);
    expect(reported.message).toContain(
      'createMcpHandler needs the optional package "@modelcontextprotocol/sdk"',
    );
  });
});
