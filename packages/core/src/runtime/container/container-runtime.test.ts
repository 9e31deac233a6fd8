import { spawn } from "node:child_process";
import { hostname } from "node:os";
import net from "node:net";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExecContext } from "../../context/exec-context.js";
import { ErrorCode, NervaError } from "../../errors.js";
import { AgentStatus } from "../../types/status.js";
import { ContainerRuntime } from "./container-runtime.js";
import { labelKeys, ownerIsGone, OWNER_ID } from "./docker.js";
import { parseMemoryLimit } from "./options.js";
import { dockerBridgeAddress, dockerTestImage } from "./test-env.test-support.js";

const image = await dockerTestImage("ContainerRuntime engine tests");
const docker = new Docker();

function invalidOptions(fn: () => unknown): NervaError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(NervaError);
    expect((err as NervaError).code).toBe(ErrorCode.INVALID_OPTIONS);
    return err as NervaError;
  }
  throw new Error("expected INVALID_OPTIONS");
}

/** Resolves when `inspect` answers 404 (the container is gone); rejects after `withinMs`. */
async function gone(id: string, withinMs: number): Promise<number> {
  const started = Date.now();
  for (;;) {
    try {
      await docker.getContainer(id).inspect();
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 404) return Date.now() - started;
      throw err;
    }
    if (Date.now() - started > withinMs)
      throw new Error(`container ${id} still exists after ${withinMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Waits until the runtime holds a container not in `before` (the one an invoke started). */
async function newContainer(runtime: ContainerRuntime, before: readonly string[]): Promise<string> {
  for (let i = 0; i < 200; i++) {
    const id = runtime.containerIds().find((c) => !before.includes(c));
    if (id !== undefined) return id;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error("no container appeared");
}

/** Containers of `runtime` serving `handler`, found by their labels. */
async function containersOf(
  runtime: ContainerRuntime,
  handler: string,
  all = false,
): Promise<string[]> {
  const keys = labelKeys("nerva");
  const listed = await docker.listContainers({
    all,
    filters: { label: [`${keys.instance}=${runtime.instanceId}`, `${keys.handler}=${handler}`] },
  });
  return listed.map((c) => c.Id);
}

const ctx = (extra: Parameters<typeof ExecContext.create>[0] = {}) =>
  ExecContext.create({ userId: "u-42", sessionId: "s-7", ...extra });

describe("ContainerRuntime options (no engine needed)", () => {
  const runtime = new ContainerRuntime();

  it("names a malformed memoryLimit", () => {
    const err = invalidOptions(() => runtime.register("a", { image: "x", memoryLimit: "lots" }));
    expect(err.message).toContain('options of "a".memoryLimit');
    expect(err.issues[0]?.path).toBe('options of "a".memoryLimit');
    invalidOptions(() => runtime.register("a", { image: "x", memoryLimit: "1m" }));
  });

  it("names a cpuLimit that is not positive", () => {
    for (const cpuLimit of ["0", 0, -1, "abc"]) {
      const err = invalidOptions(() => runtime.register("a", { image: "x", cpuLimit }));
      expect(err.message).toContain("cpuLimit");
    }
  });

  it("refuses poolSize outside warm mode, stdio for warm mode, reserved env names", () => {
    expect(
      invalidOptions(() => runtime.register("a", { image: "x", poolSize: 2 })).message,
    ).toContain("poolSize");
    expect(
      invalidOptions(() => runtime.register("a", { image: "x", mode: "warm", protocol: "stdio" }))
        .message,
    ).toContain("protocol");
    expect(
      invalidOptions(() => runtime.register("a", { image: "x", env: { NERVA_USER_ID: "forged" } }))
        .message,
    ).toContain("env.NERVA_USER_ID");
    expect(invalidOptions(() => runtime.register("a", { image: "" })).message).toContain("image");
    expect(
      invalidOptions(() => runtime.register("a", { image: "x", pidsLimit: 0 })).message,
    ).toContain("pidsLimit");
    expect(
      invalidOptions(() => runtime.register("a", { image: "x", networkMod: "none" } as never))
        .message,
    ).toContain("networkMod");
    expect(runtime.handlerNames()).toEqual([]);
  });

  it("validates the runtime options, including the shared ones", () => {
    expect(invalidOptions(() => new ContainerRuntime({ timeoutSeconds: 0 })).message).toContain(
      "timeoutSeconds",
    );
    expect(
      invalidOptions(() => new ContainerRuntime({ labelPrefix: "Bad Prefix" })).message,
    ).toContain("labelPrefix");
    expect(
      invalidOptions(() => new ContainerRuntime({ docker: { protocol: "ftp" } } as never)).message,
    ).toContain("docker.protocol");
  });

  it("parses Docker memory strings", () => {
    expect(parseMemoryLimit("256m")).toBe(256 * 1024 ** 2);
    expect(parseMemoryLimit("1g")).toBe(1024 ** 3);
    expect(parseMemoryLimit("512K")).toBe(512 * 1024);
    expect(parseMemoryLimit("1048576")).toBe(1048576);
    expect(parseMemoryLimit("12x")).toBeNull();
  });

  it("refuses a duplicate handler name", () => {
    const rt = new ContainerRuntime();
    rt.register("dup", { image: "x" });
    expect(() => rt.register("dup", { image: "x" })).toThrow(/already registered/);
  });

  it("answers with an ERROR naming the engine problem when Docker is unreachable", async () => {
    const rt = new ContainerRuntime({ docker: { socketPath: "/nonexistent/docker.sock" } });
    rt.register("echo", { image: "x" });
    const result = await rt.invoke("echo", { message: "x" }, ctx());
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toMatch(/Docker engine unreachable.*ENOENT/);
    await expect(rt.start()).rejects.toMatchObject({ code: ErrorCode.INTERNAL });
    await rt.close();
  });

  it("judges container owners: gone only when this host's pid is dead or reused", () => {
    expect(ownerIsGone(OWNER_ID)).toBe(false);
    expect(ownerIsGone(undefined)).toBe(false);
    expect(ownerIsGone("some-other-host:1:1")).toBe(false);
    // pid 1 exists but started at another tick: a reused pid.
    expect(ownerIsGone(`${hostname()}:1:999999999999`)).toBe(true);
    expect(ownerIsGone(`${hostname()}:4194303:1`)).toBe(true);
  });
});

describe.skipIf(image === null)("ContainerRuntime on a real Docker engine", () => {
  const IMAGE = image as string;
  let runtime: ContainerRuntime;

  beforeAll(async () => {
    runtime = new ContainerRuntime({ timeoutSeconds: 20, circuitBreaker: false });
    const stdio = (name: string, extra: object = {}) =>
      runtime.register(name, {
        image: IMAGE,
        command: ["node", `/handlers/${name}.mjs`],
        ...extra,
      });
    stdio("echo");
    stdio("fail");
    stdio("decline");
    stdio("context");
    stdio("slow", { timeoutSeconds: 1 });
    stdio("net-probe");
    runtime.register("net-probe-bridge", {
      image: IMAGE,
      command: ["node", "/handlers/net-probe.mjs"],
      networkMode: "bridge",
    });
    stdio("memory-hog", { memoryLimit: "64m" });
    stdio("write-fs");
    runtime.register("write-fs-rw", {
      image: IMAGE,
      command: ["node", "/handlers/write-fs.mjs"],
      readOnlyRootfs: false,
    });
    runtime.register("counter", { image: IMAGE, module: "/modules/counter.mjs", mode: "warm" });
    runtime.register("counter-pool", {
      image: IMAGE,
      module: "/modules/counter.mjs",
      mode: "warm",
      poolSize: 2,
    });
    runtime.register("warm-slow", {
      image: IMAGE,
      module: "/modules/slow.mjs",
      mode: "warm",
      timeoutSeconds: 1,
    });
    runtime.register("warm-hog", {
      image: IMAGE,
      module: "/modules/memory-hog.mjs",
      mode: "warm",
      memoryLimit: "64m",
    });
    runtime.register("noisy", { image: IMAGE, module: "/modules/noisy.mjs", mode: "warm" });
    runtime.register("crash", { image: IMAGE, module: "/modules/crash.mjs", mode: "warm" });
    runtime.register("missing-image", { image: "nerva-no-such-image:never" });
    runtime.register("missing-binary", { image: IMAGE, command: ["/no/such/binary"] });
    await runtime.start();
  });
  afterAll(async () => {
    await runtime.close();
  });

  it("returns a stdio handler's output and removes its container", async () => {
    const result = await runtime.invoke("echo", { message: "hello" }, ctx());
    expect(result).toMatchObject({
      status: AgentStatus.SUCCESS,
      output: "echo: hello",
      handler: "echo",
    });
    const listed = await containersOf(runtime, "echo", true);
    for (const id of listed) await gone(id, 2000);
  });

  it("maps a JSON object on stdout to output + data, with the context in NERVA_* variables", async () => {
    const c = ctx({
      permissions: { roles: ["admin"], allowedTools: ["search"] },
      timeoutSeconds: 60,
    });
    const result = await runtime.invoke("context", { message: "x" }, c);
    expect(result.status).toBe(AgentStatus.SUCCESS);
    expect(result.output).toBe("ok");
    expect(result.data).toMatchObject({
      request_id: c.requestId,
      trace_id: c.traceId,
      user_id: "u-42",
      session_id: "s-7",
      depth: 0,
      permissions: { roles: ["admin"], allowed_tools: ["search"], allowed_agents: null },
    });
    expect(Date.parse(String(result.data["deadline"]))).toBeLessThanOrEqual(c.timeoutAt as number);
  });

  it("turns exit code 1 into ERROR with the stderr tail, and exit code 2 into wrong_handler", async () => {
    const failed = await runtime.invoke("fail", { message: "x" }, ctx());
    expect(failed.status).toBe(AgentStatus.ERROR);
    expect(failed.error).toMatch(/exited with code 1.*boom/);
    expect(failed.data["stderr"]).toBe("boom");
    const declined = await runtime.invoke("decline", { message: "x" }, ctx());
    expect(declined.status).toBe(AgentStatus.WRONG_HANDLER);
  });

  it('networkMode "none" cannot reach a server on the host; "bridge" can (control)', async () => {
    const server = net.createServer((s) => {
      s.on("error", () => {});
      s.end("hi");
    });
    await new Promise<void>((r) => server.listen(0, "0.0.0.0", r));
    const port = String((server.address() as net.AddressInfo).port);
    const args = { host: dockerBridgeAddress(), port };
    try {
      const isolated = await runtime.invoke("net-probe", { message: "x", args }, ctx());
      expect(isolated.data).toMatchObject({ connected: false });
      expect(isolated.data["error"]).toMatch(/ENETUNREACH|EHOSTUNREACH|timeout/);
      const bridged = await runtime.invoke("net-probe-bridge", { message: "x", args }, ctx());
      expect(bridged.data).toMatchObject({ connected: true });
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it("stops a memory hog at the memory limit with a clear error", async () => {
    const result = await runtime.invoke(
      "memory-hog",
      { message: "x", args: { mb: "1024" } },
      ctx(),
    );
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toMatch(/exceeded its memory limit of 64m.*OOM-killed/);
    // Control: within the limit the same handler succeeds.
    const small = await runtime.invoke("memory-hog", { message: "x", args: { mb: "16" } }, ctx());
    expect(small).toMatchObject({ status: AgentStatus.SUCCESS, output: "allocated 16 MB" });
  });

  it("refuses writes to a read-only root filesystem, allows /tmp and a writable rootfs", async () => {
    const refused = await runtime.invoke(
      "write-fs",
      { message: "x", args: { path: "/data.txt" } },
      ctx(),
    );
    expect(refused.data).toMatchObject({ written: false, error: "EROFS" });
    const tmp = await runtime.invoke(
      "write-fs",
      { message: "x", args: { path: "/tmp/data.txt" } },
      ctx(),
    );
    expect(tmp.data).toMatchObject({ written: true });
    const rw = await runtime.invoke(
      "write-fs-rw",
      { message: "x", args: { path: "/data.txt" } },
      ctx(),
    );
    expect(rw.data).toMatchObject({ written: true });
  });

  it("kills a hung stdio handler at its deadline; its container is gone afterwards", async () => {
    const before = runtime.containerIds();
    const started = Date.now();
    const pending = runtime.invoke("slow", { message: "x" }, ctx());
    const id = await newContainer(runtime, before);
    const result = await pending;
    const elapsed = Date.now() - started;
    expect(result.status).toBe(AgentStatus.TIMEOUT);
    expect(elapsed).toBeGreaterThanOrEqual(980);
    expect(elapsed).toBeLessThan(2500);
    // The handler ignores SIGTERM: only a kill removes it this fast.
    await gone(id, 3000);
  });

  it("kills a warm container at the deadline and on cancel; the pool starts a fresh one", async () => {
    // start() filled the pool: the call runs in the container that is already up.
    const [id] = await containersOf(runtime, "warm-slow");
    expect(id).toBeDefined();
    const result = await runtime.invoke("warm-slow", { message: "x" }, ctx());
    expect(result.status).toBe(AgentStatus.TIMEOUT);
    await gone(id as string, 3000);

    let reached = (): void => {};
    const running = new Promise<void>((r) => (reached = r));
    const c = ctx({ stream: { push: () => reached() } });
    const cancelled = runtime.invoke("warm-slow", { message: "x" }, c);
    await running;
    const [id2] = await containersOf(runtime, "warm-slow");
    expect(id2).toBeDefined();
    expect(id2).not.toBe(id);
    c.cancel("user left");
    const outcome = await cancelled;
    expect(outcome.status).toBe(AgentStatus.ERROR);
    expect(outcome.error).toMatch(/cancel/);
    await gone(id2 as string, 3000);
    // Each step waits for its event; with both cores busy, the engine's container kills, removals
    // and the pool's fresh start took longer than the default 20 s in all.
  }, 60_000);

  it("reuses a warm container across invokes (state survives), up to poolSize at once", async () => {
    const first = await runtime.invoke("counter", { message: "x" }, ctx());
    const second = await runtime.invoke("counter", { message: "x" }, ctx());
    expect(Number(second.data["calls"])).toBe(Number(first.data["calls"]) + 1);
    expect(second.data["pid"]).toBe(first.data["pid"]);

    const results = await Promise.all(
      Array.from({ length: 6 }, () => runtime.invoke("counter-pool", { message: "x" }, ctx())),
    );
    expect(results.every((r) => r.status === AgentStatus.SUCCESS)).toBe(true);
    expect(await containersOf(runtime, "counter-pool")).toHaveLength(2);
    const served = results.map((r) => Number(r.data["calls"]));
    expect(served.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(6);
  });

  it("reports a warm container killed by the memory limit, then serves again", async () => {
    const result = await runtime.invoke("warm-hog", { message: "x", args: { mb: "1024" } }, ctx());
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toMatch(/exceeded its memory limit of 64m.*OOM-killed/);
    const again = await runtime.invoke("warm-hog", { message: "x", args: { mb: "16" } }, ctx());
    expect(again).toMatchObject({ status: AgentStatus.SUCCESS, output: "allocated 16 MB" });
  });

  it("reports a warm agent that crashes mid-call, and replaces a container killed while idle", async () => {
    const [first] = await containersOf(runtime, "crash");
    const crashed = await runtime.invoke("crash", { message: "x", args: { code: "3" } }, ctx());
    expect(crashed.status).toBe(AgentStatus.ERROR);
    expect(crashed.error).toMatch(/exited with code 3 during the call/);
    expect(crashed.data["stderr"]).toBe("about to crash");
    await gone(first as string, 3000);

    // Killed behind the runtime's back while idle: the next call gets a fresh container.
    const [idle] = await containersOf(runtime, "counter");
    await docker.getContainer(idle as string).kill();
    await new Promise((r) => setTimeout(r, 200));
    const served = await runtime.invoke("counter", { message: "x" }, ctx());
    expect(served).toMatchObject({ status: AgentStatus.SUCCESS, output: "1" });
    const [replacement] = await containersOf(runtime, "counter");
    expect(replacement).not.toBe(idle);
  });

  it("keeps a handler's stdout writes out of the frame stream", async () => {
    const result = await runtime.invoke("noisy", { message: "x" }, ctx());
    expect(result).toMatchObject({ status: AgentStatus.SUCCESS, output: "quiet: x" });
  });

  it("treats output beyond maxOutputBytes as an error, not a cut", async () => {
    const small = new ContainerRuntime({ maxOutputBytes: 1024 });
    small.register("echo", { image: IMAGE, command: ["node", "/handlers/echo.mjs"] });
    small.register("warm-echo", { image: IMAGE, module: "/modules/echo.mjs", mode: "warm" });
    try {
      const big = "y".repeat(70 * 1024);
      const stdio = await small.invoke("echo", { message: big }, ctx());
      expect(stdio.status).toBe(AgentStatus.ERROR);
      expect(stdio.error).toMatch(/maxOutputBytes/);
      const framed = await small.invoke("warm-echo", { message: big }, ctx());
      expect(framed.status).toBe(AgentStatus.ERROR);
      expect(framed.error).toMatch(/too large/i);
    } finally {
      await small.close();
    }
  });

  it("answers a missing image or executable with an ERROR naming it, not a timeout", async () => {
    const result = await runtime.invoke("missing-image", { message: "x" }, ctx());
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toMatch(/nerva-no-such-image:never/);
    const before = runtime.containerIds();
    const missing = await runtime.invoke("missing-binary", { message: "x" }, ctx());
    expect(missing.status).toBe(AgentStatus.ERROR);
    expect(missing.error).toMatch(/\/no\/such\/binary.*(no such file|not found)/i);
    for (const id of runtime.containerIds().filter((c) => !before.includes(c)))
      await gone(id, 3000);
  });

  it("removes orphans of a crashed host at start, and leaves live owners' containers alone", async () => {
    // A real crash: a host process starts a warm container, then dies by SIGKILL.
    const script = `
      import { ContainerRuntime } from "@nerva/core/container";
      const rt = new ContainerRuntime();
      rt.register("echo", { image: ${JSON.stringify(IMAGE)}, module: "/modules/echo.mjs", mode: "warm" });
      await rt.start();
      console.log("CONTAINER " + rt.containerIds()[0]);
      setInterval(() => {}, 1000);
    `;
    const child = spawn(
      process.execPath,
      ["--conditions=@nerva/source", "--import", "tsx", "--input-type=module", "-e", script],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    let other: Docker.Container | undefined;
    try {
      const orphan = await new Promise<string>((resolve, reject) => {
        let out = "";
        child.stdout.on("data", (d: Buffer) => {
          out += d.toString();
          const m = /CONTAINER ([0-9a-f]{64})/.exec(out);
          if (m !== null) resolve(m[1] as string);
        });
        child.once("exit", (code) => reject(new Error(`host process exited early (${code})`)));
      });
      child.kill("SIGKILL");
      await new Promise((r) => child.once("exit", r));

      // A container of another host (sharing the engine) must never be touched.
      other = await docker.createContainer({
        Image: IMAGE,
        Cmd: ["node", "-e", "0"],
        Labels: { "nerva.runtime": "container", "nerva.owner": "another-host:1:1" },
      });
      const live = await runtime.invoke("counter", { message: "x" }, ctx());
      expect(live.status).toBe(AgentStatus.SUCCESS);
      const liveIds = runtime.containerIds();

      const fresh = new ContainerRuntime();
      try {
        const info = await fresh.start();
        expect(info.removedOrphans).toContain(orphan);
        expect(info.removedOrphans).not.toContain(other.id);
        for (const id of liveIds) expect(info.removedOrphans).not.toContain(id);
        await gone(orphan, 100);
        await expect(other.inspect()).resolves.toBeDefined();
      } finally {
        await fresh.close();
      }
    } finally {
      child.kill("SIGKILL");
      await other?.remove({ force: true });
    }
  }, 60_000);

  it("close() kills and removes every container it holds, then refuses to run", async () => {
    const rt = new ContainerRuntime({ timeoutSeconds: 30 });
    rt.register("warm", { image: IMAGE, module: "/modules/echo.mjs", mode: "warm", poolSize: 2 });
    rt.register("hang", { image: IMAGE, command: ["node", "/handlers/slow.mjs"] });
    const info = await rt.start();
    expect(info.warmContainers).toBe(2);
    const pending = rt.invoke("hang", { message: "x" }, ctx());
    while (rt.containerIds().length < 3) await new Promise((r) => setTimeout(r, 25));
    const ids = [...rt.containerIds()];
    await rt.close();
    for (const id of ids) await gone(id, 0);
    expect(rt.containerIds()).toEqual([]);
    expect((await pending).status).toBe(AgentStatus.ERROR);
    const after = await rt.invoke("warm", { message: "x" }, ctx());
    expect(after.error).toMatch(/closed/);
  });
});
