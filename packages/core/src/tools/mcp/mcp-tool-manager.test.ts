import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExecContext } from "../../context/exec-context.js";
import { ErrorCode, NervaError } from "../../errors.js";
import {
  McpToolManager,
  type McpNotification,
  type McpToolManagerOptions,
} from "./mcp-tool-manager.js";

/** A real MCP server (the SDK's McpServer over stdio), started as a child process per manager. */
const SERVER = fileURLToPath(new URL("../../../test/fixtures/mcp-server.mjs", import.meta.url));
const ctx = (allowedTools: string[] | null = null, timeoutSeconds?: number) =>
  ExecContext.create({ userId: "u1", permissions: { allowedTools }, timeoutSeconds });

const open: McpToolManager[] = [];
async function start(options: Partial<McpToolManagerOptions> = {}): Promise<McpToolManager> {
  const manager = await McpToolManager.connect({
    command: process.execPath,
    args: [SERVER],
    name: "fixture",
    ...options,
  });
  open.push(manager);
  return manager;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Resolves with the first notification matching `predicate` (pushed by the server, no polling). */
function notifications() {
  const waiters: {
    predicate: (n: McpNotification) => boolean;
    resolve: (n: McpNotification) => void;
  }[] = [];
  const seen: McpNotification[] = [];
  return {
    seen,
    onNotification: (n: McpNotification) => {
      seen.push(n);
      for (const w of [...waiters]) {
        if (w.predicate(n)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(n);
        }
      }
    },
    next: (predicate: (n: McpNotification) => boolean) =>
      new Promise<McpNotification>((resolve) => waiters.push({ predicate, resolve })),
  };
}

afterAll(async () => {
  await Promise.all(open.map((m) => m.close()));
  for (const m of open) expect(m.pid).toBeNull();
});

describe("McpToolManager against a real MCP server process", () => {
  let tools: McpToolManager;
  beforeAll(async () => {
    tools = await start();
  });

  it("lists the server's tools with their JSON Schemas", async () => {
    const list = await tools.discover(ctx());
    const add = list.find((t) => t.name === "add");
    expect(add?.description).toBe("Adds two numbers");
    expect(add?.parameters).toMatchObject({
      type: "object",
      properties: { a: { type: "number" }, b: { type: "number" } },
      required: ["a", "b"],
    });
    expect(add?.parameters["$schema"]).toBeUndefined();
    expect(tools.toolNames()).toEqual(
      expect.arrayContaining(["add", "echo", "fail", "log", "progress"]),
    );
  });

  it("calls tools: structured output, text output, tool errors, invalid arguments", async () => {
    expect(await tools.call("add", { a: 2, b: 3 }, ctx())).toMatchObject({
      status: "success",
      output: { sum: 5 },
      error: null,
    });
    expect((await tools.call("echo", { text: "héllo" }, ctx())).output).toBe("héllo");
    const failed = await tools.call("fail", {}, ctx());
    expect(failed).toMatchObject({
      status: "error",
      output: null,
      error: 'Tool "fail" reported an error: deliberate failure',
    });
    const invalid = await tools.call("add", { a: "two", b: 3 }, ctx());
    expect(invalid.status).toBe("error");
    expect(invalid.error).toMatch(/Input validation error/);
    expect((await tools.call("add", [1, 2], ctx())).error).toContain("args must be an object");
  });

  it("runs 10 calls concurrently over one connection and matches each result to its call", async () => {
    // Each call answers only once the call after it has answered, so they finish in reverse order
    // if they really overlap; one at a time, call-0 would wait for call-1, which is never sent.
    const finished: number[] = [];
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        tools
          .call("after", { name: `call-${i}`, ...(i < 9 ? { after: `call-${i + 1}` } : {}) }, ctx())
          .then((r) => {
            finished.push(i);
            return r;
          }),
      ),
    );
    expect(results.map((r) => r.output)).toEqual(Array.from({ length: 10 }, (_, i) => `call-${i}`));
    expect(results.every((r) => r.status === "success")).toBe(true);
    expect(finished).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
  });

  it("lists and calls only tools the context may use", async () => {
    const c = ctx(["echo"]);
    expect((await tools.discover(c)).map((t) => t.name)).toEqual(["echo"]);
    const denied = await tools.call("add", { a: 1, b: 2 }, c);
    expect(denied.status).toBe("permission_denied");
    expect((await tools.call("nope", {}, ctx())).status).toBe("not_found");
  });

  it("records the round trip as an mcp.call span, with progress notifications as its events", async () => {
    const c = ctx();
    const r = await tools.call("progress", { steps: 3 }, c);
    expect(r.output).toBe("done in 3 steps");
    const span = c.spans.find((s) => s.name === "mcp.call");
    const progress = c.events.filter((e) => e.name === "mcp.progress");
    expect(
      progress.map((e) => [e.attributes["progress"], e.attributes["total"], e.spanId]),
    ).toEqual([
      [1, 3, span?.id],
      [2, 3, span?.id],
      [3, 3, span?.id],
    ]);
    expect(span?.attributes).toEqual({ tool: "progress", server: "fixture" });
    expect(span?.status).toBe("ok");
  });

  it("times out a call at its deadline and keeps the connection usable", async () => {
    const c = ctx(null, 0.2);
    const r = await tools.call("stubborn", { ms: 5000 }, c);
    expect(r.status).toBe("timeout");
    expect(r.durationMs).toBeLessThan(1500);
    expect(r.error).toContain("the request's deadline");
    expect((await tools.call("echo", { text: "still here" }, ctx())).output).toBe("still here");
  });

  it("ends a call when the request is cancelled", async () => {
    const c = ctx();
    const pending = tools.call("stubborn", { ms: 5000 }, c);
    setTimeout(() => c.cancel("user left"), 50);
    const r = await pending;
    expect(r.status).toBe("error");
    expect(r.error).toMatch(/was cancelled .*user left/);
  });

  it("does not leak this process's environment to the server", async () => {
    process.env["NERVA_TEST_SECRET"] = "s3cret";
    try {
      const m = await start({ env: { NERVA_VISIBLE: "yes" } });
      expect((await m.call("env", { name: "NERVA_TEST_SECRET" }, ctx())).output).toBe("unset");
      expect((await m.call("env", { name: "NERVA_VISIBLE" }, ctx())).output).toBe("set");
      expect((await m.call("env", { name: "PATH" }, ctx())).output).toBe("set");
    } finally {
      delete process.env["NERVA_TEST_SECRET"];
    }
  });
});

describe("McpToolManager notifications", () => {
  it("refreshes the tool list on tools/list_changed", async () => {
    const n = notifications();
    const tools = await start({ onNotification: n.onNotification, toolPrefix: "fx." });
    expect(tools.toolNames()).not.toContain("fx.dynamic");

    const added = n.next((x) => x.kind === "tools_changed" && x.tools.includes("fx.dynamic"));
    expect((await tools.call("fx.add_tool", { name: "dynamic" }, ctx())).output).toBe(
      "added dynamic",
    );
    await added;
    expect((await tools.discover(ctx())).map((t) => t.name)).toContain("fx.dynamic");
    expect((await tools.call("fx.dynamic", {}, ctx())).output).toBe("hello from dynamic");

    const removed = n.next((x) => x.kind === "tools_changed" && !x.tools.includes("fx.dynamic"));
    await tools.call("fx.remove_tool", { name: "dynamic" }, ctx());
    await removed;
    expect((await tools.call("fx.dynamic", {}, ctx())).status).toBe("not_found");
  });

  it("records a log message on the ctx of the only call in flight, and reports every one", async () => {
    const n = notifications();
    const tools = await start({ onNotification: n.onNotification });
    const c = ctx();
    await tools.call("log", { message: "indexing 42 files", level: "warning" }, c);
    const log = c.events.find((e) => e.name === "mcp.log");
    expect(log?.attributes).toEqual({
      level: "warning",
      logger: "fixture",
      data: "indexing 42 files",
    });
    expect(log?.spanId).toBe(c.spans.find((s) => s.name === "mcp.call")?.id);
    expect(n.seen).toContainEqual({
      kind: "log",
      level: "warning",
      logger: "fixture",
      data: "indexing 42 files",
    });
  });

  it("does not attribute a log message to anyone while calls overlap", async () => {
    const n = notifications();
    const tools = await start({ onNotification: n.onNotification });
    const other = ExecContext.create({ userId: "someone-else" });
    const mine = ctx();
    const slow = tools.call("echo", { text: "x", delayMs: 300 }, other);
    await tools.call("log", { message: "private detail", level: "info" }, mine);
    await slow;
    expect(other.events.filter((e) => e.name === "mcp.log")).toEqual([]);
    expect(mine.events.filter((e) => e.name === "mcp.log")).toEqual([]);
    expect(n.seen.some((x) => x.kind === "log" && x.data === "private detail")).toBe(true);
  });
});

describe("McpToolManager lifecycle", () => {
  it("resolves error (not a hang) for calls in flight and later when the server dies", async () => {
    const n = notifications();
    const tools = await start({ onNotification: n.onNotification });
    const pid = tools.pid!;
    const inFlight = tools.call("stubborn", { ms: 10_000 }, ctx());
    const started = performance.now();
    const crash = await tools.call("crash", {}, ctx());
    expect(crash.status).toBe("error");
    expect(crash.error).toContain('MCP server "fixture" exited');
    expect(crash.error).toContain("crashing on purpose");
    const other = await inFlight;
    expect(other.status).toBe("error");
    expect(performance.now() - started).toBeLessThan(2000);
    const later = await tools.call("echo", { text: "x" }, ctx());
    expect(later).toMatchObject({ status: "error" });
    expect(later.error).toContain("exited");
    expect(tools.connected).toBe(false);
    expect(isAlive(pid)).toBe(false);
    expect(n.seen.some((x) => x.kind === "error" && x.message.includes("exited"))).toBe(true);
  });

  it("close() ends the server process; later calls resolve error", async () => {
    const tools = await start();
    const pid = tools.pid!;
    expect(isAlive(pid)).toBe(true);
    await tools.close();
    expect(isAlive(pid)).toBe(false);
    expect(tools.pid).toBeNull();
    expect(await tools.call("echo", { text: "x" }, ctx())).toMatchObject({
      status: "error",
      error: 'MCP server "fixture" is closed.',
    });
    await tools.close(); // idempotent
  });

  it("fails fast with INVALID_OPTIONS when the command does not exist", async () => {
    const started = performance.now();
    const err = await McpToolManager.connect({ command: "/nonexistent/mcp-server" }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(NervaError);
    expect((err as NervaError).code).toBe(ErrorCode.INVALID_OPTIONS);
    expect((err as NervaError).message).toContain("options.command");
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it("reports a server that dies during start-up with its stderr", async () => {
    const err = await McpToolManager.connect({
      command: process.execPath,
      args: ["-e", "process.stderr.write('bad config: missing API_URL\\n'); process.exit(2)"],
      name: "broken",
    }).catch((e: unknown) => e);
    expect((err as NervaError).code).toBe(ErrorCode.INTERNAL);
    expect((err as NervaError).message).toContain('MCP server "broken" failed to start');
    expect((err as NervaError).message).toContain("bad config: missing API_URL");
  });

  it("validates options naming the field", async () => {
    await expect(McpToolManager.connect({ command: "" })).rejects.toThrow(/options\.command/);
    await expect(
      McpToolManager.connect({ command: "node", toolPrefix: "has space" }),
    ).rejects.toThrow(/options\.toolPrefix/);
    await expect(McpToolManager.connect({ command: "node", timeoutSeconds: -1 })).rejects.toThrow(
      /options\.timeoutSeconds/,
    );
  });

  it("connect() without @modelcontextprotocol/sdk installed throws MISSING_DEPENDENCY naming it", async () => {
    // A child process in which a resolve hook makes the SDK unresolvable, as if not installed.
    const hook = fileURLToPath(
      new URL("../../../test/fixtures/register-hide-mcp-sdk.mjs", import.meta.url),
    );
    const entry = fileURLToPath(new URL("./index.ts", import.meta.url));
    const script = `
      import { McpToolManager } from ${JSON.stringify(entry)};
      try { await McpToolManager.connect({ command: "node" }); console.log("connected?!"); }
      catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message, details: e.details })); }`;
    const out = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        ["--import", "tsx", "--import", hook, "--input-type=module", "-e", script],
        { cwd: fileURLToPath(new URL("../../../../..", import.meta.url)), timeout: 30_000 },
        (err, stdout, stderr) =>
          err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout),
      ),
    );
    const reported = JSON.parse(out.trim()) as { code: string; message: string; details: unknown };
    expect(reported.code).toBe(ErrorCode.MISSING_DEPENDENCY);
    expect(reported.message).toContain('needs the optional package "@modelcontextprotocol/sdk"');
    expect(reported.message).toContain("pnpm add @modelcontextprotocol/sdk");
    expect(reported.details).toEqual({
      package: "@modelcontextprotocol/sdk",
      install: "npm install @modelcontextprotocol/sdk",
    });
  });
});

describe("McpToolManager and the server's own text", () => {
  it("masks the values of options.env in tool errors, mcp.log events and the stderr of an exit", async () => {
    const secret = `plain ${process.pid} words ${Date.now()}`;
    const n = notifications();
    const tools = await start({
      env: { UPSTREAM_CREDENTIAL: secret },
      onNotification: n.onNotification,
    });
    const c = ctx();
    const refused = await tools.call("leak", { name: "UPSTREAM_CREDENTIAL", how: "error" }, c);
    expect(refused.status).toBe("error");
    expect(refused.error).toContain("upstream refused credential [redacted]");
    await tools.call("leak", { name: "UPSTREAM_CREDENTIAL", how: "log" }, c);
    const crashed = await tools.call("leak", { name: "UPSTREAM_CREDENTIAL", how: "crash" }, c);
    expect(crashed.error).toContain("auth failed with [redacted]");
    const quoted = JSON.stringify([refused, crashed, c.spans, c.events]);
    expect(quoted).not.toContain(secret);
    expect(c.events.some((e) => e.name === "mcp.log")).toBe(true);
    const down = n.seen.filter((x) => x.kind === "error");
    expect(JSON.stringify(down)).not.toContain(secret);
  });
});
