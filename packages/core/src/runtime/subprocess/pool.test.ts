import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { ExecContext } from "../../context/exec-context.js";
import { AgentStatus } from "../../types/status.js";
import { SubprocessRuntime } from "./subprocess-runtime.js";
import { KILL_MARGIN_MS, alive, hostPid } from "./process-probe.test-support.js";

const here = dirname(fileURLToPath(import.meta.url));
const dir = join(here, "fixtures", "isolation");
const ctx = () => ExecContext.create({ userId: "u1" });

async function waitFor(check: () => boolean, limitMs: number): Promise<boolean> {
  const started = performance.now();
  while (performance.now() - started < limitMs) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 10));
  }
  return check();
}

/** Runs the `pid` fixture: which worker ran it (a token naming the process), and its count. */
async function pidCall(runtime: SubprocessRuntime): Promise<{ worker: string; calls: number }> {
  const r = await runtime.invoke("pid", { message: "" }, ctx());
  expect(r.error).toBeNull();
  expect(r.status).toBe(AgentStatus.SUCCESS);
  return { worker: String(r.data["token"]), calls: Number(r.data["calls"]) };
}

/** The pids (as the host sees them) of the pool's workers. */
const workerPids = (runtime: SubprocessRuntime): number[] =>
  runtime
    .stats()
    .pool.workers.map((w) => w.pid)
    .filter((p): p is number => p !== null);

describe("SubprocessRuntime worker pool", () => {
  it("reuses a warm worker: no process start per call, module state kept", async () => {
    const runtime = new SubprocessRuntime({ handlerDir: dir, pool: { min: 1, max: 1 } });
    try {
      await runtime.warmUp();
      const a = await pidCall(runtime);
      const b = await pidCall(runtime);
      expect(b.worker).toBe(a.worker);
      expect(b.calls).toBe(a.calls + 1);
      expect(runtime.stats().pool.started).toBe(1);
    } finally {
      await runtime.close();
    }
  });

  it("recycles a worker after maxInvocationsPerWorker", async () => {
    const runtime = new SubprocessRuntime({
      handlerDir: dir,
      pool: { min: 1, max: 1 },
      maxInvocationsPerWorker: 3,
    });
    try {
      const workers: string[] = [];
      let firstPid = 0;
      for (let i = 0; i < 4; i++) {
        workers.push((await pidCall(runtime)).worker);
        if (i === 0) firstPid = workerPids(runtime)[0] as number;
      }
      expect(new Set(workers.slice(0, 3)).size).toBe(1);
      expect(workers[3]).not.toBe(workers[0]);
      expect(runtime.stats().pool.recycled).toBe(1);
      expect(firstPid).toBeGreaterThan(0);
      expect(await waitFor(() => !alive(firstPid), 2000)).toBe(true);
    } finally {
      await runtime.close();
    }
  });

  it("recycles an idle worker after idleSeconds and keeps min warm", async () => {
    const runtime = new SubprocessRuntime({
      handlerDir: dir,
      pool: { min: 1, max: 2, idleSeconds: 0.3 },
    });
    try {
      const first = await pidCall(runtime);
      const firstPid = workerPids(runtime)[0] as number;
      expect(await waitFor(() => runtime.stats().pool.recycled >= 1, 3000)).toBe(true);
      expect(await waitFor(() => !alive(firstPid), 2000)).toBe(true);
      await runtime.warmUp();
      const second = await pidCall(runtime);
      expect(second.worker).not.toBe(first.worker);
      expect(second.calls).toBe(1);
    } finally {
      await runtime.close();
    }
  });

  it("queues invocations beyond max and runs them all", async () => {
    const runtime = new SubprocessRuntime({ handlerDir: dir, pool: { min: 0, max: 1 } });
    try {
      const results = await Promise.all(Array.from({ length: 5 }, () => pidCall(runtime)));
      expect(new Set(results.map((r) => r.worker)).size).toBe(1);
      expect(results.map((r) => r.calls).sort()).toEqual([1, 2, 3, 4, 5]);
      expect(runtime.stats().pool.workers.length).toBe(1);
    } finally {
      await runtime.close();
    }
  });

  it("does not deadlock when a handler delegates to a module handler in a full pool", async () => {
    const runtime = new SubprocessRuntime({
      handlerDir: dir,
      timeoutSeconds: 10,
      pool: { min: 0, max: 1 },
    });
    try {
      const result = await runtime.invoke("forward", { message: "x", args: { to: "pid" } }, ctx());
      expect(result.status).toBe(AgentStatus.SUCCESS);
      expect(Number(result.output)).toBeGreaterThan(0);
      // The blocked worker was not counted: a second one served the delegation.
      expect(runtime.stats().pool.started).toBe(2);
    } finally {
      await runtime.close();
    }
  });

  it("keeps a worker that stops within cancelGraceSeconds after a cancel frame", async () => {
    const runtime = new SubprocessRuntime({
      handlerDir: dir,
      pool: { min: 1, max: 1 },
      cancelGraceSeconds: 0.08,
    });
    try {
      const before = await pidCall(runtime);
      const c = ctx();
      const pending = runtime.invoke("graceful", { message: "x" }, c);
      await new Promise((r) => setTimeout(r, 100));
      c.cancel("enough");
      const result = await pending;
      expect(result.status).toBe(AgentStatus.ERROR);
      expect(result.error).toMatch(/cancelled/);
      const after = await pidCall(runtime);
      expect(after.worker).toBe(before.worker);
      expect(runtime.stats().pool.died).toBe(0);
    } finally {
      await runtime.close();
    }
  });

  it("kills a worker that ignores the cancel frame when the grace runs out", async () => {
    const runtime = new SubprocessRuntime({
      handlerDir: dir,
      pool: { min: 1, max: 2 },
      cancelGraceSeconds: 0.05,
      handlers: { loop: { timeoutSeconds: 0.3 } },
    });
    try {
      await runtime.warmUp();
      let resolvePid!: (pid: number) => void;
      const pidP = new Promise<number>((r) => (resolvePid = r));
      // The loop reports its pid as it sees it; the host's is found through its worker.
      const c = ExecContext.create({
        stream: {
          push: (chunk) => {
            const busy = runtime.stats().pool.workers.find((w) => w.state === "busy");
            resolvePid(hostPid(Number(chunk), busy?.pid as number));
          },
        },
      });
      const started = performance.now();
      const result = await runtime.invoke("loop", { message: "x" }, c);
      const pid = await pidP;
      expect(result.status).toBe(AgentStatus.TIMEOUT);
      expect(await waitFor(() => !alive(pid), 2 * KILL_MARGIN_MS)).toBe(true);
      // Deadline (300 ms) + grace (50 ms), with room for the kill itself: the loop ignores
      // the cancel frame, so a grace that never ends in a kill still fails.
      expect(performance.now() - started).toBeLessThan(300 + 50 + KILL_MARGIN_MS);
    } finally {
      await runtime.close();
    }
  });
});

describe("SubprocessRuntime and the host process", () => {
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
  const script = (body: string): string => `
    import { ExecContext } from ${JSON.stringify(pathToFileURL(join(here, "../../context/exec-context.ts")).href)};
    import { SubprocessRuntime } from ${JSON.stringify(pathToFileURL(join(here, "subprocess-runtime.ts")).href)};
    const runtime = new SubprocessRuntime({ handlerDir: ${JSON.stringify(dir)}, pool: { min: 1, max: 1 } });
    const result = await runtime.invoke("pid", { message: "" }, ExecContext.create());
    if (result.status !== "success") throw new Error(result.error);
    console.log(runtime.stats().pool.workers[0].pid);
    ${body}
  `;
  const run = (body: string) =>
    spawn(process.execPath, ["--import", tsx, "--input-type=module", "-e", script(body)], {
      stdio: ["ignore", "pipe", "inherit"],
    });
  const firstLine = (child: ReturnType<typeof run>) =>
    new Promise<number>((resolve, reject) => {
      let text = "";
      child.stdout?.on("data", (d: Buffer) => {
        text += d.toString();
        if (text.includes("\n")) resolve(Number(text.split("\n")[0]));
      });
      child.on("exit", () => reject(new Error(`host exited before printing: ${text}`)));
    });

  it("idle workers do not keep a host alive that forgot close(), and exit with it", async () => {
    const host = run("");
    const worker = await firstLine(host);
    expect(worker).toBeGreaterThan(0);
    const code = await new Promise<number | null>((resolve) => host.on("exit", resolve));
    expect(code).toBe(0);
    expect(await waitFor(() => !alive(worker), 3000)).toBe(true);
  }, 30_000);

  it("close() resolves in a host with nothing else to do (the code after it runs)", async () => {
    // An idle worker does not hold the event loop; close() must hold it until the worker is gone,
    // or the host exits with the close() promise unsettled and the lines after it never run.
    const host = run('await runtime.close(); console.log("closed");');
    let out = "";
    host.stdout?.on("data", (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((resolve) => host.on("exit", resolve));
    const [worker, after] = out.trim().split("\n");
    expect({ code, after }).toEqual({ code: 0, after: "closed" });
    expect(alive(Number(worker))).toBe(false);
  }, 30_000);

  it("workers exit when their host is SIGKILLed (the channel closes)", async () => {
    const host = run("setInterval(() => {}, 1000);");
    const worker = await firstLine(host);
    expect(alive(worker)).toBe(true);
    host.kill("SIGKILL");
    expect(await waitFor(() => !alive(worker), 3000)).toBe(true);
  }, 30_000);
});
