import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExecContext } from "../../context/exec-context.js";
import { ErrorCode } from "../../errors.js";
import { AgentStatus } from "../../types/status.js";
import { parseStdout } from "./executable.js";
import { SubprocessRuntime } from "./subprocess-runtime.js";
import { KILL_MARGIN_MS, goneWithin, markerGoneWithin } from "./process-probe.test-support.js";

const dir = join(dirname(fileURLToPath(import.meta.url)), "fixtures", "isolation");

const ctx = (extra: Parameters<typeof ExecContext.create>[0] = {}) =>
  ExecContext.create({ userId: "u1", sessionId: "s1", ...extra });

describe("executable handlers: the protocol", () => {
  let runtime: SubprocessRuntime;
  beforeAll(() => {
    runtime = new SubprocessRuntime({
      handlerDir: dir,
      timeoutSeconds: 10,
      circuitBreaker: false,
      pool: { min: 0 },
    });
  });
  afterAll(() => runtime.close());

  it("runs a Python script written for the protocol unchanged, with the machine's python3", async () => {
    const chunks: string[] = [];
    const c = ctx({
      timeoutSeconds: 20,
      permissions: { roles: ["analyst"], allowedAgents: ["plain"] },
      stream: { push: (chunk) => void chunks.push(chunk) },
    });
    const result = await runtime.invoke("py_agent", { message: "book a flight" }, c);
    expect(result.error).toBeNull();
    expect(result).toMatchObject({
      status: AgentStatus.SUCCESS,
      output: "BOOK A FLIGHT",
      handler: "py_agent",
    });
    expect(result.data).toMatchObject({
      user: "u1",
      depth: 0,
      inner: "hello from sh",
      permissions: { roles: ["analyst"], allowed_tools: null, allowed_agents: ["plain"] },
    });
    expect(String(result.data["python"])).toMatch(/^3\./);
    // The handler's deadline: its 10 s timeout, inside the request's 20 s.
    const deadline = Date.parse(String(result.data["deadline"]));
    expect(deadline).toBeGreaterThan(Date.now());
    expect(deadline).toBeLessThanOrEqual(c.timeoutAt as number);
    expect(chunks).toEqual(["book ", "a ", "flight "]);
    expect(c.tokenUsage).toMatchObject({ promptTokens: 12, completionTokens: 8, totalTokens: 20 });
    // The delegation ran as a child of the python handler, with the permission check applied.
    const del = c.spans.find((s) => s.name === "delegate" && s.attributes["handler"] === "plain");
    expect(del?.status).toBe("ok");
  }, 30_000);

  it("takes plain-text stdout as the output, minus one trailing newline", async () => {
    const result = await runtime.invoke("plain", { message: "x" }, ctx());
    expect(result).toMatchObject({ status: "success", output: "hello from sh", data: {} });
  });

  it("takes `response` as the text when there is no `output`; other fields are data", async () => {
    const result = await runtime.invoke("response", { message: "x" }, ctx());
    expect(result).toMatchObject({
      status: "success",
      output: "via response",
      data: { score: 3, tags: ["a"] },
    });
  });

  it("maps a non-zero exit to ERROR with the code, stdout's error and the stderr tail", async () => {
    const result = await runtime.invoke("exit5", { message: "x" }, ctx());
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toContain("exited with code 5: database unreachable");
    expect(result.error).toContain('stderr: "about to fail"');
    expect(result.data["stderr"]).toBe("about to fail");
  });

  it("reports death by a signal", async () => {
    const result = await runtime.invoke("sh_segv", { message: "x" }, ctx());
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toMatch(/killed by signal SIGSEGV, segmentation fault/);
  });

  it("accepts a result frame on the channel (any status)", async () => {
    const result = await runtime.invoke("needs_data", { message: "x" }, ctx());
    expect(result).toMatchObject({
      status: AgentStatus.NEEDS_DATA,
      output: "which city?",
      data: { missing: "city" },
    });
  });

  it("treats a malformed frame on the channel as a protocol error", async () => {
    const result = await runtime.invoke("sh_garbage", { message: "x" }, ctx());
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toMatch(/Protocol error on the channel of "sh_garbage".*not JSON/);
  });

  it("reports a non-executable file as an ERROR saying so, at once (not a timeout)", async () => {
    const started = performance.now();
    const result = await runtime.invoke("not_exec", { message: "x" }, ctx());
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toMatch(/not_exec\.py is not executable \(EACCES\).*chmod \+x/);
    // Not at the runtime's 10 s deadline.
    expect(performance.now() - started).toBeLessThan(KILL_MARGIN_MS);
  });

  it("reports a missing #! interpreter as an ERROR (ENOENT), not a timeout", async () => {
    const result = await runtime.invoke("bad_interp", { message: "x" }, ctx());
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toMatch(/interpreter on its #! line does not exist \(ENOENT\)/);
  });

  it("does not choke on a large input the handler never reads", async () => {
    const result = await runtime.invoke("plain", { message: "y".repeat(900_000) }, ctx());
    expect(result).toMatchObject({ status: "success", output: "hello from sh" });
  });

  it("kills what the handler left running when it exits", async () => {
    const c = ctx();
    const result = await runtime.invoke("orphan", { message: "x" }, c);
    expect(result.status).toBe("success");
    // The orphan carries the request id in its command line.
    expect(result.data["orphan"]).toBe(c.requestId);
    expect(await markerGoneWithin(c.requestId)).toBeLessThan(KILL_MARGIN_MS);
  });
});

describe("executable handlers: limits and isolation", () => {
  let runtime: SubprocessRuntime;
  const secret = "another-secret-9f8e7d";
  beforeAll(() => {
    process.env["SECRET_TOKEN"] = secret;
    process.env["LC_NERVA_TEST"] = "kept-by-prefix";
    runtime = new SubprocessRuntime({
      handlerDir: dir,
      timeoutSeconds: 10,
      circuitBreaker: false,
      pool: { min: 0 },
      maxOutputBytes: 64 * 1024,
      env: { allow: ["PATH", "LC_*"], set: { APP_MODE: "test" } },
      handlers: { sh_slow: { timeoutSeconds: 0.3 } },
    });
  });
  afterAll(async () => {
    delete process.env["SECRET_TOKEN"];
    delete process.env["LC_NERVA_TEST"];
    await runtime.close();
  });

  it("passes only allowlisted variables, the configured ones and the NERVA_* context", async () => {
    const c = ctx({ userId: "alice", sessionId: null });
    const result = await runtime.invoke("env_dump", { message: "x" }, c);
    expect(result.status).toBe("success");
    const env = Object.fromEntries(
      result.output
        .split("\n")
        .map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]),
    ) as Record<string, string>;
    expect(result.output).not.toContain(secret);
    expect(env).toMatchObject({
      PATH: process.env["PATH"],
      LC_NERVA_TEST: "kept-by-prefix",
      APP_MODE: "test",
      NERVA_HANDLER: "env_dump",
      NERVA_REQUEST_ID: c.requestId,
      NERVA_TRACE_ID: c.traceId,
      NERVA_USER_ID: "alice",
      NERVA_DEPTH: "0",
      NERVA_MEMORY_SCOPE: "session",
      NERVA_CHANNEL_FD: "3",
    });
    expect(env["NERVA_SESSION_ID"]).toBeUndefined();
    expect(JSON.parse(env["NERVA_PERMISSIONS"] as string)).toEqual({
      roles: [],
      allowed_tools: null,
      allowed_agents: null,
    });
    expect(JSON.parse(env["NERVA_CONTEXT"] as string)).toMatchObject({ request_id: c.requestId });
    expect(env["NERVA_TRACEPARENT"]).toMatch(new RegExp(`^00-${c.traceId}-[0-9a-f]{16}-01$`));
    expect(Date.parse(env["NERVA_DEADLINE"] as string)).toBeGreaterThan(Date.now());
    // PWD is added by the shell running the script.
    const allowed = /^(PATH|LC_.*|APP_MODE|NERVA_[A-Z_]+|PWD)$/;
    for (const key of Object.keys(env)) expect(key).toMatch(allowed);
  });

  it("fails a stdout flood past maxOutputBytes (not cut) and kills the process", async () => {
    const result = await runtime.invoke("sh_flood", { message: "x" }, ctx());
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toMatch(/Output limit exceeded.*more than 65536 bytes to stdout/);
    expect(result.output).toBe("");
  });

  it("fails a stderr flood and attaches its tail", async () => {
    const result = await runtime.invoke("sh_errflood", { message: "x" }, ctx());
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toMatch(/Output limit exceeded.*stderr/);
    expect(String(result.data["stderr"])).toContain("error error error error");
  });

  it("kills the process group at the deadline within 100 ms, grandchildren included", async () => {
    let resolvePid!: (pid: number) => void;
    const pidP = new Promise<number>((r) => (resolvePid = r));
    // Once it streams, the process the runtime started (its pid as the host sees it): the last
    // listed, as a process of an earlier test may still be listed while it is being reaped.
    const c = ctx({
      stream: { push: () => resolvePid(runtime.stats().executables.at(-1) as number) },
    });
    const started = performance.now();
    const result = await runtime.invoke("sh_slow", { message: "x" }, c);
    const pid = await pidP;
    expect(result.status).toBe(AgentStatus.TIMEOUT);
    expect(result.error).toContain(`pid ${pid}`);
    await goneWithin(pid);
    expect(performance.now() - (started + 300)).toBeLessThan(KILL_MARGIN_MS);
    // Listed until the runtime has seen its exit (its own 'exit' event, a moment after).
    const listedAt = performance.now();
    while (
      runtime.stats().executables.length > 0 &&
      performance.now() - listedAt < KILL_MARGIN_MS
    ) {
      await new Promise((r) => setTimeout(r, 2));
    }
    expect(runtime.stats().executables).toEqual([]);
  });

  it("kills it within 100 ms of ctx.cancel()", async () => {
    let resolvePid!: (pid: number) => void;
    const pidP = new Promise<number>((r) => (resolvePid = r));
    const c = ctx({
      stream: { push: () => resolvePid(runtime.stats().executables.at(-1) as number) },
    });
    const pending = runtime.invoke("sh_slow", { message: "x" }, c);
    const pid = await Promise.race([
      pidP,
      pending.then((r) => Promise.reject(new Error(`ended early: ${r.error}`))),
    ]);
    const cancelledAt = performance.now();
    c.cancel("stop");
    const result = await pending;
    await goneWithin(pid);
    expect(performance.now() - cancelledAt).toBeLessThan(KILL_MARGIN_MS);
    expect(result.error).toMatch(/cancelled/);
  });
});

describe("executable handlers: memory limit", () => {
  it("stops a Python hog at memoryLimitMb and says which limit fired", async () => {
    const runtime = new SubprocessRuntime({
      handlerDir: dir,
      timeoutSeconds: 20,
      pool: { min: 0 },
      memoryLimitMb: 256,
    });
    try {
      const result = await runtime.invoke("py_mem", { message: "x" }, ctx());
      expect(result.status).toBe(AgentStatus.ERROR);
      expect(result.error).toMatch(/Memory limit exceeded.*256 MiB address space.*ulimit -v/);
      expect(String(result.data["stderr"])).toContain("MemoryError");
      // The same limit leaves a small handler alone.
      expect((await runtime.invoke("plain", { message: "x" }, ctx())).status).toBe("success");
      const blocked = await runtime.invoke("not_exec", { message: "x" }, ctx());
      expect(blocked.error).toMatch(/not executable/);
    } finally {
      await runtime.close();
    }
  }, 30_000);

  it("recognises the memory limit even when no stderr is kept for the result", async () => {
    const runtime = new SubprocessRuntime({
      handlerDir: dir,
      timeoutSeconds: 20,
      pool: { min: 0 },
      memoryLimitMb: 256,
      stderrTailBytes: 0,
    });
    try {
      const result = await runtime.invoke("py_mem", { message: "x" }, ctx());
      expect(result.error).toMatch(/Memory limit exceeded/);
      expect(result.data["stderr"]).toBeUndefined();
    } finally {
      await runtime.close();
    }
  }, 30_000);
});

describe("handlerDir lookup", () => {
  const made: string[] = [];
  const tempDir = (files: Record<string, string | [string, number]>): string => {
    const d = mkdtempSync(join(tmpdir(), "nerva-handlers-"));
    made.push(d);
    for (const [name, content] of Object.entries(files)) {
      const [text, mode] = Array.isArray(content) ? content : [content, 0o755];
      writeFileSync(join(d, name), text);
      chmodSync(join(d, name), mode);
    }
    return d;
  };
  afterAll(() => {
    for (const d of made) rmSync(d, { recursive: true, force: true });
  });

  it("finds modules and executables, ignoring docs, data, hidden and _private files", async () => {
    const d = tempDir({
      "a.mjs": "export default () => 'a';",
      "b.cjs": "module.exports = { handler: async () => 'b' };",
      "c.py": "#!/bin/sh\necho c\n",
      d: "#!/bin/sh\necho d\n",
      "README.md": "# docs",
      "data.json": "{}",
      "_helper.mjs": "export const x = 1;",
      ".hidden": "#!/bin/sh\n",
      "types.ts": "export {};",
    });
    const runtime = new SubprocessRuntime({ handlerDir: d, pool: { min: 0 } });
    try {
      expect([...runtime.handlerNames()].sort()).toEqual(["a", "b", "c", "d"]);
      expect(runtime.kind("a")).toBe("module");
      expect(runtime.kind("b")).toBe("module");
      expect(runtime.kind("c")).toBe("executable");
      expect((await runtime.invoke("b", { message: "" }, ctx())).output).toBe("b");
      expect((await runtime.invoke("c", { message: "" }, ctx())).output).toBe("c");
    } finally {
      await runtime.close();
    }
  });

  it("refuses two files claiming one name, naming both", () => {
    const d = tempDir({ "echo.sh": "#!/bin/sh\n", "echo.py": "#!/bin/sh\n" });
    expect(() => new SubprocessRuntime({ handlerDir: d })).toThrow(
      expect.objectContaining({
        code: ErrorCode.INVALID_OPTIONS,
        message: expect.stringMatching(/"echo" is claimed by several files.*echo\.py.*echo\.sh/),
      }),
    );
  });

  it("refuses a missing handlerDir and per-handler options for unknown handlers", () => {
    expect(() => new SubprocessRuntime({ handlerDir: "/nonexistent/agents" })).toThrow(
      /handlerDir: \/nonexistent\/agents is not an existing directory/,
    );
    const d = tempDir({ "x.sh": "#!/bin/sh\n" });
    expect(
      () => new SubprocessRuntime({ handlerDir: d, handlers: { y: { timeoutSeconds: 1 } } }),
    ).toThrow(/options\.handlers\.y: there is no handler file for "y"/);
    expect(() => new SubprocessRuntime({ handlerDir: d, pool: { min: 3, max: 2 } })).toThrow(
      /options\.pool\.min: min must not exceed max/,
    );
    expect(() => new SubprocessRuntime({ handlerDir: d, env: { allow: ["BAD NAME"] } })).toThrow(
      /options\.env\.allow\.0/,
    );
  });

  it("picks up a file added after start, and reports one deleted after start", async () => {
    const d = tempDir({ "first.sh": "#!/bin/sh\necho first\n" });
    const runtime = new SubprocessRuntime({ handlerDir: d, pool: { min: 0 } });
    try {
      expect((await runtime.invoke("later", { message: "" }, ctx())).error).toMatch(
        /Unknown handler "later"/,
      );
      writeFileSync(join(d, "later.sh"), "#!/bin/sh\necho later\n");
      chmodSync(join(d, "later.sh"), 0o755);
      expect((await runtime.invoke("later", { message: "" }, ctx())).output).toBe("later");
      rmSync(join(d, "first.sh"));
      const gone = await runtime.invoke("first", { message: "" }, ctx());
      expect(gone.status).toBe(AgentStatus.ERROR);
      expect(gone.error).toMatch(/first\.sh was not found.*ENOENT/);
    } finally {
      await runtime.close();
    }
  });
});

describe("parseStdout", () => {
  it("follows the protocol's rules", () => {
    expect(parseStdout('{"output":"o","a":1}\n')).toEqual({ output: "o", data: { a: 1 } });
    expect(parseStdout('{"response":"r"}')).toEqual({ output: "r", data: {} });
    expect(parseStdout('{"output":"o","response":"r"}')).toEqual({
      output: "o",
      data: { response: "r" },
    });
    expect(parseStdout('{"output":{"k":1}}')).toEqual({ output: '{"k":1}', data: {} });
    expect(parseStdout("[1,2]\n")).toEqual({ output: "[1,2]", data: {} });
    expect(parseStdout("{not json\n")).toEqual({ output: "{not json", data: {} });
    expect(parseStdout("two\nlines\n\n")).toEqual({ output: "two\nlines\n", data: {} });
    expect(parseStdout("")).toEqual({ output: "", data: {} });
  });
});
