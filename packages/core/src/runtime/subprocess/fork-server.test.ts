// Executables in the namespace modes run on fork servers: one namespace serves several calls in
// turn, so nothing of a call may reach the next. Real servers, real namespaces, real processes.
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { ExecContext } from "../../context/exec-context.js";
import { NervaError } from "../../errors.js";
import { AgentStatus } from "../../types/status.js";
import { forkServers } from "./confinement.js";
import { FORK_SERVER_CALLS, parseServerReports } from "./fork-server-script.js";
import { ForkServer, ForkServerPool } from "./fork-server.js";
import { encodeHandshake } from "./init.js";
import { Confinement, type ConfinementMode } from "./launcher.js";
import {
  KILL_MARGIN_MS,
  goneWithin,
  markerGoneWithin,
  withMarker,
} from "./process-probe.test-support.js";
import { SubprocessRuntime } from "./subprocess-runtime.js";

const here = dirname(fileURLToPath(import.meta.url));
const dir = join(here, "fixtures", "fork-server");
const isolation = join(here, "fixtures", "isolation");
const confinement = join(here, "fixtures", "confinement");

const KILLING = [Confinement.USER_NAMESPACE, Confinement.PID_NAMESPACE] as const;

/** Whether this machine offers `mode`; if not, the reason is printed (the tests using it skip). */
function offers(mode: ConfinementMode): boolean {
  try {
    void new SubprocessRuntime({ handlerDir: dir, pool: { min: 0 }, confinement: mode }).close();
    return true;
  } catch (err) {
    if (!(err instanceof NervaError) || !/is not available on this machine/.test(err.message)) {
      throw err;
    }
    if (process.env["CI"] === "true") {
      throw new Error(`CI cannot test ${mode}: ${err.message}`, { cause: err });
    }
    console.warn(`Skipping the ${mode} fork server tests: ${err.message}`);
    return false;
  }
}
const available = new Map(KILLING.map((mode) => [mode, offers(mode)] as const));

const runtimes: SubprocessRuntime[] = [];
afterAll(async () => {
  await Promise.all(runtimes.map((r) => r.close()));
});
/**
 * A runtime whose fork server is up: the first call of a runtime runs on a per-call init (no
 * server is idle yet) and starts one for the calls that follow.
 */
const warm = async (mode: ConfinementMode, handlerDir = dir) => {
  const runtime = make(mode, handlerDir);
  const first = await runtime.invoke("plain", { message: "" }, ExecContext.create());
  expect(first.status).toBe(AgentStatus.SUCCESS);
  return runtime;
};

const make = (mode: ConfinementMode, handlerDir = dir, timeoutSeconds = 10) => {
  const runtime = new SubprocessRuntime({
    handlerDir,
    confinement: mode,
    pool: { min: 0 },
    circuitBreaker: false,
    timeoutSeconds,
  });
  runtimes.push(runtime);
  return runtime;
};

/** What census.sh printed: the pids in its /proc, its own pid, its PID namespace. */
const census = (output: string) => {
  const m = /^(.*) self (\d+) ns (pid:\[\d+\])$/.exec(output);
  if (m === null) throw new Error(`not a census: ${output}`);
  return { pids: (m[1] as string).split(" "), self: m[2] as string, ns: m[3] as string };
};

/**
 * Invokes `handler`; `pid` is the host pid running it, read when it streams its first chunk: the
 * last one listed, as the calls before it may still be listed (until their launcher has exited,
 * which may be after their result). The tests using it make one call at a time.
 */
const call = async (runtime: SubprocessRuntime, handler: string, timeoutSeconds?: number) => {
  let pid = 0;
  const ctx = ExecContext.create({
    ...(timeoutSeconds === undefined ? {} : { timeoutSeconds }),
    stream: { push: () => void (pid ||= runtime.stats().executables.at(-1) ?? -1) },
  });
  const result = await runtime.invoke(handler, { message: "x" }, ctx);
  return { result, pid, requestId: ctx.requestId };
};

describe("fork server pool: servers that cannot start", () => {
  it("stops handing out servers (calls then start their own init)", async () => {
    let started = 0;
    const pool = new ForkServerPool(() => {
      started++;
      return { command: "/bin/sh", args: ["-c", "exit 7"], env: {}, handshake: null };
    }, tmpdir());
    try {
      expect(pool.take()).toBeNull();
      await new Promise((r) => setImmediate(r));
      const server = pool.take();
      expect(server?.available).toBe(true);
      const call = (server as ForkServer).run(encodeHandshake("/bin/true", [], {}));
      expect(await call.ended).toMatchObject({ kind: "server-gone" });
      await server?.exited;
      expect(server?.failedToStart).toBe(true);
      const before = started;
      expect(pool.take()).toBeNull();
      await new Promise((r) => setImmediate(r));
      expect(started).toBe(before);
    } finally {
      await pool.close();
    }
  });
});

describe("fork server: the report protocol", () => {
  it("splits complete report lines and keeps the rest", () => {
    expect(parseServerReports("0 X0\n1 S9\n2 E13\n3 X")).toEqual({
      reports: [
        { call: 0, report: { kind: "exit", code: 0 } },
        { call: 1, report: { kind: "signal", signal: "SIGKILL" } },
        { call: 2, report: { kind: "exec-error", code: "EACCES" } },
      ],
      rest: "3 X",
    });
    expect(parseServerReports("garbage\n0 Q1\n").reports).toEqual([]);
  });
});

for (const mode of KILLING) {
  describe.skipIf(!available.get(mode))(`fork server, ${mode}`, () => {
    it("runs calls one after another in the same server, and nothing of a call outlives its result", async () => {
      const runtime = await warm(mode);
      const left = await call(runtime, "leave");
      expect(left.result).toMatchObject({ status: AgentStatus.SUCCESS, output: "left" });
      // The daemon it started in its own session was killed and reaped before the result.
      expect(withMarker(left.requestId)).toEqual([]);
      const first = await call(runtime, "census");
      const second = await call(runtime, "census");
      expect([first.pid, second.pid]).toEqual([left.pid, left.pid]);
      // The same namespace, where each call sees the server (PID 1) and itself: nothing of the
      // calls before.
      const [a, b] = [census(first.result.output), census(second.result.output)];
      expect(a.ns).toBe(b.ns);
      expect(a.pids).toEqual(["1", a.self]);
      expect(b.pids).toEqual(["1", b.self]);
    });

    it("starts programs without capabilities or stray fds; they cannot read the server or change its mounts", async () => {
      const runtime = await warm(mode);
      const probe = await call(runtime, "probe");
      expect(probe.result.status).toBe(AgentStatus.SUCCESS);
      const seen = Object.fromEntries(
        probe.result.output.split("\n").map((line) => line.split(/=(.*)/s).slice(0, 2)),
      ) as Record<string, string>;
      for (const set of ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"]) {
        expect(seen["caps"]).toMatch(new RegExp(`${set}: 0+;`));
      }
      expect(seen["fds"]).toBe("0 1 2 3");
      expect(seen["environ"]).toMatch(/Permission denied/);
      expect(seen["mem"]).toMatch(/Permission denied/);
      expect(seen["umount"]).toBe("no");
      expect(seen["mount"]).toBe("no");
      // And the next call, on the same server (same namespace: the server is idle again once it
      // has reported the probe, before the probe's result), still has its private /proc.
      const next = await call(runtime, "census");
      expect(next.pid).toBe(probe.pid);
      expect(census(next.result.output).pids).toHaveLength(2);
    });

    it("never lets calls running at the same time share a namespace", async () => {
      const runtime = make(mode);
      const both = await Promise.all([
        call(runtime, "slow_census"),
        call(runtime, "slow_census"),
        call(runtime, "slow_census"),
      ]);
      const seen = both.map(({ result }) => census(result.output));
      for (const { pids, self } of seen) expect(pids).toEqual(["1", self]);
      expect(new Set(seen.map((c) => c.ns)).size).toBe(3);
    });

    it(`serves ${FORK_SERVER_CALLS} calls per server, then the next call runs on a spare`, async () => {
      const runtime = await warm(mode);
      const pids: number[] = [];
      for (let i = 0; i <= FORK_SERVER_CALLS; i++) {
        const c = await call(runtime, "census");
        expect(c.result.status).toBe(AgentStatus.SUCCESS);
        pids.push(c.pid);
      }
      expect(new Set(pids.slice(0, FORK_SERVER_CALLS)).size).toBe(1);
      expect(pids[FORK_SERVER_CALLS]).not.toBe(pids[0]);
      // The spent server has exited (its namespace with it).
      expect(await goneWithin(pids[0] as number)).toBeLessThan(KILL_MARGIN_MS);
    }, 30_000);

    it("applies memoryLimitMb to each program it forks", async () => {
      const runtime = new SubprocessRuntime({
        handlerDir: isolation,
        confinement: mode,
        pool: { min: 0 },
        timeoutSeconds: 20,
        memoryLimitMb: 256,
      });
      runtimes.push(runtime);
      const ctx = () => ExecContext.create();
      expect((await runtime.invoke("plain", { message: "" }, ctx())).status).toBe("success");
      for (let i = 0; i < 2; i++) {
        const hog = await runtime.invoke("py_mem", { message: "x" }, ctx());
        expect(hog.error).toMatch(/Memory limit exceeded.*256 MiB address space/);
      }
      expect((await runtime.invoke("plain", { message: "" }, ctx())).output).toBe("hello from sh");
    }, 30_000);

    it("kills a server whose call is stopped, and runs the next call on another", async () => {
      const runtime = await warm(mode, confinement);
      const stopped = await call(runtime, "escape_sh", 1);
      expect(stopped.result.status).toBe(AgentStatus.TIMEOUT);
      // Its launcher exits once the namespace is gone.
      expect(await goneWithin(stopped.pid)).toBeLessThan(KILL_MARGIN_MS);
      const next = await call(runtime, "plain");
      expect(next.result.output).toBe("plain");
      expect(runtime.stats().executables).toEqual([]);
    }, 20_000);
  });
}

describe("without fork servers (the per-call init, where a machine has no fork server)", () => {
  afterEach(() => {
    forkServers.enabled = true;
  });
  for (const mode of KILLING) {
    it.skipIf(!available.get(mode))(
      `${mode}: exit codes, signals, start failures and setsid'd escapees`,
      async () => {
        forkServers.enabled = false;
        const runtime = make(mode, isolation);
        const escapes = make(mode, confinement);
        const counting = make(mode, dir);
        forkServers.enabled = true;
        const run = (name: string) => runtime.invoke(name, { message: "x" }, ExecContext.create());
        expect((await run("exit5")).error).toMatch(/exited with code 5: database unreachable/);
        expect((await run("sh_segv")).error).toMatch(/killed by signal SIGSEGV/);
        expect((await run("not_exec")).error).toMatch(/is not executable \(EACCES\)/);
        expect((await run("bad_interp")).error).toMatch(/#! line does not exist \(ENOENT\)/);
        const escaped = await call(escapes, "escape_sh", 1);
        expect(escaped.result.status).toBe(AgentStatus.TIMEOUT);
        expect(await markerGoneWithin(escaped.requestId)).toBeLessThan(KILL_MARGIN_MS);
        // A launcher per call, each with its own namespace.
        // (Pids and namespace inode numbers may be reused once freed, so the proof is that a's
        // launcher is gone before b starts, and each program sees a namespace of its own.)
        const a = await call(counting, "census");
        expect(a.pid).toBeGreaterThan(0);
        expect(await goneWithin(a.pid)).toBeLessThan(KILL_MARGIN_MS);
        const b = await call(counting, "census");
        expect(census(a.result.output).pids).toEqual(["1", "2"]);
        expect(census(b.result.output).pids).toEqual(["1", "2"]);
        // Nothing of the launcher's reaches the program: only its stdio and the frame channel.
        const probe = await call(counting, "probe");
        expect(probe.result.output).toMatch(/^fds=0 1 2 3$/m);
      },
      30_000,
    );
  }
});
