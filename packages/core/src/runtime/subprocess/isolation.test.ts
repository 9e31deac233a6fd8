import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExecContext } from "../../context/exec-context.js";
import type { AgentResult } from "../../types/agent.js";
import { AgentStatus } from "../../types/status.js";
import { SubprocessRuntime } from "./subprocess-runtime.js";
import {
  KILL_MARGIN_MS,
  alive,
  goneWithin,
  groupGoneWithin,
  hostPid,
} from "./process-probe.test-support.js";

const dir = join(dirname(fileURLToPath(import.meta.url)), "fixtures", "isolation");

async function firstChunk(first: Promise<string>, pending: Promise<AgentResult>): Promise<string> {
  return Promise.race([
    first,
    pending.then((r) => {
      throw new Error(`ended before streaming its pid: ${r.status} ${r.error}`);
    }),
  ]);
}

const LOOP_TIMEOUT_MS = 400;

const ctx = (extra: Parameters<typeof ExecContext.create>[0] = {}) =>
  ExecContext.create({ userId: "u1", sessionId: "s1", ...extra });

/** A context whose stream resolves `first` with the first chunk (a pid the fixture reports). */
function streaming(extra: Parameters<typeof ExecContext.create>[0] = {}) {
  let resolveFirst!: (chunk: string) => void;
  const first = new Promise<string>((r) => (resolveFirst = r));
  const c = ctx({ ...extra, stream: { push: (chunk) => resolveFirst(chunk) } });
  return { c, first };
}

describe("SubprocessRuntime isolation (module handlers in the worker pool)", () => {
  let runtime: SubprocessRuntime;
  const secret = "s3cr3t-value-never-in-children";

  beforeAll(async () => {
    process.env["SECRET_TOKEN"] = secret;
    runtime = new SubprocessRuntime({
      handlerDir: dir,
      timeoutSeconds: 10,
      circuitBreaker: false,
      pool: { min: 1, max: 2 },
      maxOutputBytes: 256 * 1024,
      memoryLimitMb: 64,
      env: { set: { GREETING: "hello" } },
      handlers: {
        loop: { timeoutSeconds: LOOP_TIMEOUT_MS / 1000 },
        // Loads child_process and forks in the worker before it streams: room for a loaded CI box.
        spawner: { timeoutSeconds: 1 },
        spender: { timeoutSeconds: 0.3 },
        hog: { timeoutSeconds: 30 },
      },
    });
    await runtime.warmUp();
  });
  afterAll(async () => {
    delete process.env["SECRET_TOKEN"];
    await runtime.close();
  });

  /** A token naming the worker process that ran the `pid` fixture. */
  const workerOf = async (): Promise<string> => {
    const r = await runtime.invoke("pid", { message: "" }, ctx());
    expect(r.status).toBe(AgentStatus.SUCCESS);
    return String(r.data["token"]);
  };
  /** The host's pid of the worker running a handler now (what the runtime started). */
  const busyWorker = (): number => {
    const busy = runtime.stats().pool.workers.filter((w) => w.state === "busy");
    expect(busy).toHaveLength(1);
    return busy[0]?.pid as number;
  };

  it("turns a throw into an ERROR and keeps the worker", async () => {
    const before = await workerOf();
    const result = await runtime.invoke("throws", { message: "x" }, ctx());
    expect(result).toMatchObject({ status: AgentStatus.ERROR, error: "kaput", handler: "throws" });
    expect(await workerOf()).toBe(before);
  });

  it("survives process.exit(3): ERROR naming the exit code, worker replaced", async () => {
    const before = runtime.stats().pool.died;
    const result = await runtime.invoke("exit", { message: "x" }, ctx());
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toMatch(/Worker crashed.*"exit".*exited with code 3/);
    expect(runtime.stats().pool.died).toBe(before + 1);
    expect(await workerOf()).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("survives a SIGKILL of the worker", async () => {
    const result = await runtime.invoke("selfkill", { message: "x" }, ctx());
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toMatch(/killed by signal SIGKILL/);
  });

  it("survives a segmentation fault", async () => {
    const result = await runtime.invoke("segv", { message: "x" }, ctx());
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toMatch(/SIGSEGV, segmentation fault/);
    expect((await runtime.invoke("pid", { message: "" }, ctx())).status).toBe("success");
  });

  it("kills an infinite loop at its timeout within 100 ms and replaces the worker", async () => {
    await runtime.warmUp();
    const { c, first } = streaming();
    const started = performance.now();
    const pending = runtime.invoke("loop", { message: "x" }, c);
    const reported = Number(await firstChunk(first, pending));
    const worker = busyWorker();
    const pid = hostPid(reported, worker);
    const result = await pending;
    const deadlineMs = started + LOOP_TIMEOUT_MS;
    expect(result.status).toBe(AgentStatus.TIMEOUT);
    expect(result.error).toContain(`pid ${worker}`);
    await goneWithin(pid);
    // From the deadline to the process being gone (killed and reaped).
    expect(performance.now() - deadlineMs).toBeLessThan(KILL_MARGIN_MS);
    expect(alive(pid)).toBe(false);
    // The process the runtime started (the namespace's launcher, or the worker itself) too.
    expect(await goneWithin(worker)).toBeLessThan(KILL_MARGIN_MS);
    await workerOf();
    expect(runtime.stats().pool.workers.map((w) => w.pid)).not.toContain(worker);
  });

  it("kills the worker within 100 ms of ctx.cancel()", async () => {
    await runtime.warmUp();
    const { c, first } = streaming();
    const pending = runtime.invoke("loop", { message: "x" }, c.child("caller"));
    const pid = hostPid(Number(await firstChunk(first, pending)), busyWorker());
    const cancelledAt = performance.now();
    c.cancel("user left");
    const result = await pending;
    const answeredMs = performance.now() - cancelledAt;
    const goneMs = (await goneWithin(pid)) + answeredMs;
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toMatch(/cancelled/);
    expect(answeredMs).toBeLessThan(KILL_MARGIN_MS);
    expect(goneMs).toBeLessThan(KILL_MARGIN_MS);
  });

  it("kills what the handler started (its process group) at the deadline", async () => {
    await runtime.warmUp();
    const { c, first } = streaming();
    const pending = runtime.invoke("spawner", { message: "x" }, c);
    const grandchild = hostPid(Number(await firstChunk(first, pending)), busyWorker());
    expect(alive(grandchild)).toBe(true);
    const result = await pending;
    expect(result.status).toBe(AgentStatus.TIMEOUT);
    expect(await goneWithin(grandchild)).toBeLessThan(KILL_MARGIN_MS);
  });

  it("stops a memory hog at memoryLimitMb and says which limit fired", async () => {
    const result = await runtime.invoke("hog", { message: "x" }, ctx());
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toMatch(/Memory limit exceeded/);
    expect(result.error).toMatch(/V8 heap limit.*64 MiB.*--max-old-space-size/);
  }, 60_000);

  it("fails a stdout flood past maxOutputBytes instead of cutting it", async () => {
    const result = await runtime.invoke("flood", { message: "x" }, ctx());
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toMatch(/Output limit exceeded.*more than 262144 bytes to stdout/);
  });

  it("fails a stderr flood and attaches the stderr tail", async () => {
    const result = await runtime.invoke("errflood", { message: "x" }, ctx());
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toMatch(/Output limit exceeded.*stderr/);
    expect(String(result.data["stderr"])).toMatch(/^e+$/);
    expect(String(result.data["stderr"]).length).toBeLessThanOrEqual(4096);
  });

  it("keeps handler logs off the protocol channel and attaches stderr to a success", async () => {
    const result = await runtime.invoke("chatty", { message: "hi" }, ctx());
    expect(result).toMatchObject({ status: AgentStatus.SUCCESS, output: "chatty: hi" });
    expect(result.data["stderr"]).toBe("warning: something odd");
  });

  it("treats garbage on the channel as a protocol error and replaces the worker", async () => {
    const result = await runtime.invoke("garbage", { message: "x" }, ctx());
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toMatch(/Protocol error.*Malformed frame/);
    expect((await runtime.invoke("pid", { message: "" }, ctx())).status).toBe("success");
  });

  it("reports a module without a handler export", async () => {
    const result = await runtime.invoke("noexport", { message: "x" }, ctx());
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toMatch(/exports no handler/);
  });

  it("charges token usage recorded before a timeout", async () => {
    await runtime.warmUp();
    const c = ctx();
    const result = await runtime.invoke("spender", { message: "x" }, c);
    expect(result.status).toBe(AgentStatus.TIMEOUT);
    expect(c.tokenUsage).toMatchObject({ promptTokens: 7, completionTokens: 3, totalTokens: 10 });
    expect(c.tokenUsage.costUsd).toBeCloseTo(0.5, 10);
  });

  it("gives workers the allowlisted environment only: the host's secrets stay home", async () => {
    expect(process.env["SECRET_TOKEN"]).toBe(secret);
    const result = await runtime.invoke("env", { message: "x" }, ctx());
    const env = result.data["env"] as Record<string, string>;
    expect(JSON.stringify(env)).not.toContain(secret);
    expect(env["SECRET_TOKEN"]).toBeUndefined();
    expect(env["GREETING"]).toBe("hello");
    expect(env["PATH"]).toBe(process.env["PATH"]);
    for (const key of Object.keys(env)) {
      expect(
        ["PATH", "LANG", "TZ", "GREETING"].includes(key) ||
          key.startsWith("LC_") ||
          // Set by node itself at start-up in some environments.
          key === "NODE_CHANNEL_FD",
      ).toBe(true);
    }
  });

  it("refills the pool after all those deaths, and the host is alive", async () => {
    const stats = runtime.stats().pool;
    expect(stats.died).toBeGreaterThanOrEqual(8);
    expect(stats.workers.filter((w) => w.state !== "dead").length).toBeGreaterThanOrEqual(1);
    expect((await runtime.invoke("pid", { message: "" }, ctx())).status).toBe("success");
  });
});

describe("SubprocessRuntime breaker and close", () => {
  it("counts crashes in the circuit breaker and then rejects without starting workers", async () => {
    const runtime = new SubprocessRuntime({
      handlerDir: dir,
      pool: { min: 1, max: 1 },
      circuitBreaker: { failureThreshold: 2, recoverySeconds: 60 },
    });
    try {
      for (let i = 0; i < 2; i++) {
        expect((await runtime.invoke("exit", { message: "x" }, ctx())).error).toMatch(/code 3/);
      }
      const started = runtime.stats().pool.started;
      const rejected = await runtime.invoke("exit", { message: "x" }, ctx());
      expect(rejected.error).toMatch(/Circuit open/);
      expect(runtime.circuit("exit")?.state).toBe("open");
      expect(runtime.stats().pool.started).toBe(started);
      expect((await runtime.invoke("pid", { message: "" }, ctx())).status).toBe("success");
    } finally {
      await runtime.close();
    }
  });

  it("close() kills busy and idle workers and running executables; nothing is left", async () => {
    const runtime = new SubprocessRuntime({ handlerDir: dir, pool: { min: 2, max: 3 } });
    await runtime.warmUp();
    const loop = streaming();
    const looping = runtime.invoke("loop", { message: "x" }, loop.c);
    await firstChunk(loop.first, looping);
    const sleeper = streaming();
    const sleeping = runtime.invoke("sh_slow", { message: "x" }, sleeper.c);
    await firstChunk(sleeper.first, sleeping);
    const shPid = runtime.stats().executables[0] as number;
    const pids = [
      ...runtime
        .stats()
        .pool.workers.map((w) => w.pid)
        .filter((p): p is number => p !== null),
      shPid,
    ];
    expect(pids.length).toBeGreaterThanOrEqual(3);
    await runtime.close();
    for (const pid of pids) {
      expect(() => process.kill(pid, 0)).toThrow(expect.objectContaining({ code: "ESRCH" }));
    }
    // The sh's sleep (a grandchild) was killed with the group (and its namespace).
    expect(await groupGoneWithin(shPid)).toBeLessThan(KILL_MARGIN_MS);
    expect((await looping).status).toBe(AgentStatus.ERROR);
    expect((await sleeping).status).toBe(AgentStatus.ERROR);
    const after = await runtime.invoke("pid", { message: "" }, ctx());
    expect(after.error).toMatch(/closed/);
  });
});
