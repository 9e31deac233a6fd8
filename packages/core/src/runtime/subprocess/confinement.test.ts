import { spawn } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
  mkdtempSync,
  readdirSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { ExecContext } from "../../context/exec-context.js";
import { ErrorCode, NervaError } from "../../errors.js";
import { AgentStatus } from "../../types/status.js";
import { Confinement, type ConfinementMode } from "./launcher.js";
import {
  KILL_MARGIN_MS,
  alive,
  markerGoneWithin,
  withMarker,
} from "./process-probe.test-support.js";
import { SubprocessRuntime } from "./subprocess-runtime.js";

const here = dirname(fileURLToPath(import.meta.url));
const dir = join(here, "fixtures", "confinement");
const isolation = join(here, "fixtures", "isolation");
const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;

/** Whether this machine offers `mode`; if not, the reason is printed (the tests using it skip). */
function offers(mode: ConfinementMode): boolean {
  try {
    void new SubprocessRuntime({ handlerDir: dir, pool: { min: 0 }, confinement: mode }).close();
    return true;
  } catch (err) {
    // Only a mode the machine lacks is skipped; any other error is a failure.
    if (!(err instanceof NervaError) || !/is not available on this machine/.test(err.message)) {
      throw err;
    }
    // CI runs on a machine that offers every mode (root, user namespaces on): nothing may skip there.
    if (process.env["CI"] === "true") {
      throw new Error(`CI cannot test ${mode}: ${err.message}`, { cause: err });
    }
    console.warn(`Skipping the ${mode} tests: ${err.message}`);
    return false;
  }
}

const CONFINED = [
  Confinement.USER_NAMESPACE,
  Confinement.PID_NAMESPACE,
  Confinement.CAPABILITIES,
] as const;
const KILLING = [Confinement.USER_NAMESPACE, Confinement.PID_NAMESPACE] as const;
const available = new Map<ConfinementMode, boolean>([
  ...CONFINED.map((mode) => [mode, offers(mode)] as const),
  [Confinement.NONE, true],
]);

/** Runs `body` as an ES module in a new Node process (the sources through tsx); its stdout. */
function host(
  body: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; out: string; err: string }> {
  const script = `
    import { ExecContext } from ${JSON.stringify(pathToFileURL(join(here, "../../context/exec-context.ts")).href)};
    import { SubprocessRuntime } from ${JSON.stringify(pathToFileURL(join(here, "subprocess-runtime.ts")).href)};
    ${body}
  `;
  const child = spawn(process.execPath, ["--import", tsx, "--input-type=module", "-e", script], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, out, err })));
}

describe("confinement: the host's launch environment stays out of reach", () => {
  const secret = `launch-secret-${process.pid}-${Date.now()}`;
  let results: Record<string, { module: string; executable: string; hostVisible: boolean }>;

  it("runs hunting handlers in a host started with a secret, under every mode", async () => {
    const modes = [...available].filter(([, ok]) => ok).map(([mode]) => mode);
    const ran = await host(
      `
      import { readlinkSync } from "node:fs";
      const out = {};
      for (const mode of ${JSON.stringify(modes)}) {
        const runtime = new SubprocessRuntime({
          handlerDir: ${JSON.stringify(dir)},
          confinement: mode,
          pool: { min: 0, max: 1 },
          timeoutSeconds: 20,
          env: {
            set: {
              PEEK_NAME: "NERVA_TEST_SECRET",
              PEEK_HOST_PID: String(process.pid),
              PEEK_HOST_MNT: readlinkSync("/proc/self/ns/mnt"),
            },
          },
        });
        const module = await runtime.invoke("peek", { message: "" }, ExecContext.create());
        const executable = await runtime.invoke("peek_sh", { message: "" }, ExecContext.create());
        if (module.status !== "success" || executable.status !== "success") {
          throw new Error(mode + ": " + module.error + " / " + executable.error);
        }
        out[mode] = { module: module.output, executable: executable.output, hostVisible: module.data.hostVisible };
        await runtime.close();
      }
      console.log(JSON.stringify(out));
      `,
      { ...process.env, NERVA_TEST_SECRET: secret },
    );
    expect(ran.err).not.toMatch(/Error/);
    expect(ran.code).toBe(0);
    results = JSON.parse(ran.out) as typeof results;
    expect(Object.keys(results).sort()).toEqual(modes.sort());
  }, 60_000);

  it("unconfined, the hunt works: the handlers find the secret (the leak being closed)", () => {
    expect(results[Confinement.NONE]?.module).toContain(secret);
    expect(results[Confinement.NONE]?.executable).toContain(secret);
  });

  for (const mode of CONFINED) {
    it.skipIf(!available.get(mode))(`${mode}: neither handler finds it`, () => {
      const found = results[mode];
      expect(found).toBeDefined();
      expect(found?.module).not.toContain(secret);
      expect(found?.executable).not.toContain(secret);
    });
  }

  for (const mode of KILLING) {
    it.skipIf(!available.get(mode))(
      `${mode}: the handler does not even see the host in its /proc`,
      () => {
        expect(results[mode]?.hostVisible).toBe(false);
      },
    );
  }
});

describe("confinement: a timeout or cancel ends every process a handler started", () => {
  const runtimes: SubprocessRuntime[] = [];
  afterAll(async () => {
    await Promise.all(runtimes.map((r) => r.close()));
  });
  const make = (mode: ConfinementMode, extra: { cancelGraceSeconds?: number } = {}) => {
    const runtime = new SubprocessRuntime({
      handlerDir: dir,
      confinement: mode,
      pool: { min: 0, max: 2 },
      circuitBreaker: false,
      timeoutSeconds: 10,
      ...extra,
    });
    runtimes.push(runtime);
    return runtime;
  };
  /** Invokes `handler`; resolves once it streamed "ready" (its escapees are running). */
  const start = (runtime: SubprocessRuntime, handler: string, timeoutSeconds?: number) => {
    let ready!: () => void;
    const running = new Promise<void>((r) => (ready = r));
    const ctx = ExecContext.create({
      ...(timeoutSeconds === undefined ? {} : { timeoutSeconds }),
      stream: { push: () => ready() },
    });
    const result = runtime.invoke(handler, { message: "x" }, ctx);
    const started = Promise.race([
      running,
      result.then((r) => Promise.reject(new Error(`ended before ready: ${r.error}`))),
    ]);
    return { ctx, result, started };
  };

  for (const mode of KILLING) {
    for (const handler of ["escape", "escape_sh"]) {
      it.skipIf(!available.get(mode))(
        `${mode}, ${handler}: at the timeout`,
        async () => {
          const runtime = make(mode);
          const run = start(runtime, handler, 3);
          await run.started;
          expect(withMarker(run.ctx.requestId).length).toBeGreaterThanOrEqual(2);
          expect((await run.result).status).toBe(AgentStatus.TIMEOUT);
          expect(await markerGoneWithin(run.ctx.requestId)).toBeLessThan(KILL_MARGIN_MS);
        },
        20_000,
      );

      it.skipIf(!available.get(mode))(
        `${mode}, ${handler}: at a cancel`,
        async () => {
          const runtime = make(mode);
          const run = start(runtime, handler);
          await run.started;
          expect(withMarker(run.ctx.requestId).length).toBeGreaterThanOrEqual(2);
          run.ctx.cancel("user left");
          const result = await run.result;
          expect(result.error).toMatch(/cancelled/);
          expect(await markerGoneWithin(run.ctx.requestId)).toBeLessThan(KILL_MARGIN_MS);
        },
        20_000,
      );
    }

    it.skipIf(!available.get(mode))(
      `${mode}: a worker that stops within cancelGraceSeconds but left a process behind is replaced`,
      async () => {
        const runtime = make(mode, { cancelGraceSeconds: 0.1 });
        const run = start(runtime, "linger");
        await run.started;
        const worker = runtime.stats().pool.workers[0]?.pid;
        expect(withMarker(run.ctx.requestId)).toHaveLength(1);
        run.ctx.cancel("enough");
        expect((await run.result).status).toBe(AgentStatus.ERROR);
        expect(await markerGoneWithin(run.ctx.requestId)).toBeLessThan(KILL_MARGIN_MS);
        expect(runtime.stats().pool.workers.map((w) => w.pid)).not.toContain(worker);
      },
      20_000,
    );
  }

  it("unconfined, a setsid'd process survives the timeout (what the namespace fixes)", async () => {
    const runtime = make(Confinement.NONE);
    const run = start(runtime, "escape_sh", 1);
    await run.started;
    expect((await run.result).status).toBe(AgentStatus.TIMEOUT);
    try {
      await new Promise((r) => setTimeout(r, 200));
      expect(withMarker(run.ctx.requestId).length).toBeGreaterThanOrEqual(1);
    } finally {
      // Each escapee leads its own session and group (its sleep with it, holding the stdio).
      for (const pid of withMarker(run.ctx.requestId)) process.kill(-pid, "SIGKILL");
    }
  }, 20_000);
});

describe("confinement: exit codes, signals and start failures pass through the namespace's init", () => {
  for (const mode of KILLING) {
    it.skipIf(!available.get(mode))(
      `${mode}`,
      async () => {
        const runtime = new SubprocessRuntime({
          handlerDir: isolation,
          confinement: mode,
          circuitBreaker: false,
          pool: { min: 0, max: 1 },
          // The handlers get these; the init (perl) must not be affected by them.
          env: { set: { PERL5OPT: "-MNo::Such::Module", LC_ALL: "xx_YY.UTF-8" } },
        });
        expect(runtime.confinement).toBe(mode);
        const run = (name: string) => runtime.invoke(name, { message: "x" }, ExecContext.create());
        try {
          expect((await run("exit5")).error).toMatch(/exited with code 5: database unreachable/);
          expect((await run("sh_segv")).error).toMatch(/killed by signal SIGSEGV/);
          expect((await run("segv")).error).toMatch(/killed by signal SIGSEGV/);
          expect((await run("selfkill")).error).toMatch(/killed by signal SIGKILL/);
          expect((await run("exit")).error).toMatch(/exited with code 3/);
          const notExec = await run("not_exec");
          expect(notExec.error).toMatch(/is not executable \(EACCES\)/);
          expect(notExec.data["stderr"]).toBeUndefined();
          expect((await run("bad_interp")).error).toMatch(/#! line does not exist \(ENOENT\)/);
          const plain = await run("plain");
          expect(plain).toMatchObject({ status: AgentStatus.SUCCESS, output: "hello from sh" });
          expect(plain.data["stderr"]).toBeUndefined();
          const env = (await run("env_dump")).output.split("\n");
          expect(env).toContain("PERL5OPT=-MNo::Such::Module");
          expect(env).toContain("LC_ALL=xx_YY.UTF-8");
        } finally {
          await runtime.close();
        }
      },
      30_000,
    );
  }
});

describe("confinement: the launcher started ahead of need", () => {
  const made: string[] = [];
  afterAll(() => {
    for (const d of made) rmSync(d, { recursive: true, force: true });
  });
  /** A handler directory of its own: processes working in it are this test's. */
  const handlerDir = (): string => {
    const d = mkdtempSync(join(tmpdir(), "nerva-spare-"));
    made.push(d);
    copyFileSync(join(dir, "plain.sh"), join(d, "plain.sh"));
    writeFileSync(
      join(d, "streams.sh"),
      `#!/bin/sh\necho '{"type":"chunk","text":"x"}' >&3\necho done\n`,
    );
    chmodSync(join(d, "streams.sh"), 0o755);
    return d;
  };
  /** Pids of the live processes whose working directory is `d`. */
  const workingIn = (d: string): number[] =>
    readdirSync("/proc")
      .filter((p) => /^\d+$/.test(p))
      .filter((p) => {
        try {
          return readlinkSync(`/proc/${p}/cwd`) === d && alive(Number(p));
        } catch {
          return false;
        }
      })
      .map(Number);

  /** Milliseconds until `pids()` is empty (polled every 5 ms, up to 2 margins), or Infinity. */
  const goneWithin = async (pids: () => number[]): Promise<number> => {
    const started = performance.now();
    while (performance.now() - started < 2 * KILL_MARGIN_MS) {
      if (pids().length === 0) return performance.now() - started;
      await new Promise((r) => setTimeout(r, 5));
    }
    return Infinity;
  };

  for (const mode of KILLING) {
    it.skipIf(!available.get(mode))(
      `${mode}: serves the next call, and is gone after close()`,
      async () => {
        const d = handlerDir();
        const runtime = new SubprocessRuntime({ handlerDir: d, confinement: mode });
        try {
          for (let i = 0; i < 3; i++) {
            const r = await runtime.invoke("plain", { message: "" }, ExecContext.create());
            expect(r.output).toBe("plain");
          }
          // The spare (the launcher and its init) waits; the calls before it are gone.
          const waiting = async (): Promise<number[]> => {
            await goneWithin(() => workingIn(d).filter((p) => !spare.includes(p)));
            return workingIn(d);
          };
          let spare: number[] = [];
          spare = await waiting();
          expect(spare.length).toBeGreaterThanOrEqual(1);
          // The next call runs in it.
          let ran = 0;
          const ctx = ExecContext.create({
            // The last listed: an earlier call's launcher may still be listed while it exits.
            stream: { push: () => void (ran = runtime.stats().executables.at(-1) ?? 0) },
          });
          expect((await runtime.invoke("streams", { message: "" }, ctx)).output).toBe("done");
          expect(spare).toContain(ran);
        } finally {
          await runtime.close();
        }
        // Killed by close(); the kernel finishes tearing the namespace down a moment later.
        expect(await goneWithin(() => workingIn(d))).toBeLessThan(KILL_MARGIN_MS);
      },
      30_000,
    );

    it.skipIf(!available.get(mode))(
      `${mode}: does not keep a host alive that forgot close(), and exits with it`,
      async () => {
        const d = handlerDir();
        const ran = await host(
          `
          const runtime = new SubprocessRuntime({ handlerDir: ${JSON.stringify(d)}, confinement: ${JSON.stringify(mode)} });
          const r = await runtime.invoke("plain", { message: "" }, ExecContext.create());
          console.log(r.output);
          `,
          process.env,
        );
        expect({ code: ran.code, out: ran.out.trim() }).toEqual({ code: 0, out: "plain" });
        // The spare's init reads the end of its socket and exits.
        expect(await goneWithin(() => workingIn(d))).toBeLessThan(KILL_MARGIN_MS);
      },
      30_000,
    );
  }
});

describe("confinement: choosing it, and the warning when there is none", () => {
  const made: string[] = [];
  afterAll(() => {
    for (const d of made) rmSync(d, { recursive: true, force: true });
  });
  /** A PATH directory holding only `tools` (symlinks to the real ones). */
  const pathWith = (...tools: string[]): string => {
    const d = mkdtempSync(join(tmpdir(), "nerva-path-"));
    made.push(d);
    for (const tool of tools) symlinkSync(`/usr/bin/${tool}`, join(d, tool));
    return d;
  };
  /** Starts a host with `PATH`, which creates runtimes with `modes` and runs an executable. */
  const hostWith = async (path: string, modes: string[]) => {
    const ran = await host(
      `
      const warnings = [];
      process.on("warning", (w) => warnings.push({ code: w.code, message: w.message }));
      const made = [];
      for (const confinement of ${JSON.stringify(modes)}) {
        try {
          const runtime = new SubprocessRuntime({ handlerDir: ${JSON.stringify(dir)}, pool: { min: 0 }, confinement });
          const r = await runtime.invoke("plain", { message: "" }, ExecContext.create());
          made.push({ confinement: runtime.confinement, output: r.output });
          await runtime.close();
        } catch (err) {
          made.push({ code: err.code, message: err.message });
        }
      }
      await new Promise((r) => setTimeout(r, 50));
      console.log(JSON.stringify({ warnings, made }));
      `,
      { ...process.env, PATH: path },
    );
    expect(ran.code, ran.err).toBe(0);
    return JSON.parse(ran.out) as {
      warnings: { code: string; message: string }[];
      made: { confinement?: string; output?: string; code?: string; message?: string }[];
    };
  };

  it("warns exactly once, at start-up, when no mechanism is available (auto)", async () => {
    const { warnings, made } = await hostWith(pathWith(), ["auto", "auto", "none"]);
    expect(made).toEqual([
      { confinement: "none", output: "plain" },
      { confinement: "none", output: "plain" },
      { confinement: "none", output: "plain" },
    ]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.code).toBe("NERVA_SUBPROCESS_UNCONFINED");
    expect(warnings[0]?.message).toMatch(/not confined.*\/proc\/<host pid>\/environ.*setsid/);
    expect(warnings[0]?.message).toMatch(/unshare \(util-linux\)/);
  }, 30_000);

  it("says nothing when confinement is turned off on purpose", async () => {
    const { warnings, made } = await hostWith(pathWith(), ["none"]);
    expect(made).toEqual([{ confinement: "none", output: "plain" }]);
    expect(warnings).toEqual([]);
  }, 30_000);

  it.skipIf(process.getuid?.() !== 0 && process.env["CI"] !== "true")(
    "falls back to dropping capabilities (root) and warns once about setsid",
    async () => {
      const { warnings, made } = await hostWith(pathWith("setpriv"), ["auto", "auto"]);
      expect(made.map((m) => m.confinement)).toEqual(["capabilities", "capabilities"]);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]?.message).toMatch(/without capabilities.*setsid/);
    },
    30_000,
  );

  it("refuses a mode this machine does not offer, naming what is missing", async () => {
    const { warnings, made } = await hostWith(pathWith(), ["user-namespace"]);
    expect(made).toEqual([
      {
        code: ErrorCode.INVALID_OPTIONS,
        message: expect.stringMatching(
          /options\.confinement: "user-namespace" is not available.*unshare \(util-linux\) and perl \(perl-base\) not on the PATH/,
        ),
      },
    ]);
    expect(warnings).toEqual([]);
  }, 30_000);

  it("validates the option", () => {
    expect(
      () =>
        new SubprocessRuntime({
          handlerDir: dir,
          confinement: "jail" as Confinement,
        }),
    ).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_OPTIONS }));
    expect(() => new SubprocessRuntime({ handlerDir: dir, confinement: "jail" as never })).toThrow(
      /options\.confinement/,
    );
  });

  it("reports the mode in use", async () => {
    const runtime = new SubprocessRuntime({ handlerDir: dir, pool: { min: 0 } });
    try {
      expect(Object.values(Confinement)).toContain(runtime.confinement);
      expect(runtime.confinement).not.toBe(Confinement.AUTO);
    } finally {
      await runtime.close();
    }
  });
});
