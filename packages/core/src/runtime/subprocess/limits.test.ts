// Attacks on the host through what a subprocess handler sends back: frames nested thousands of
// levels deep (which overflowed the stack in validation and killed the host), oversized frames,
// a frame cut off by the end of the channel, frames for another invocation, and stdout JSON
// nested too deep. Real worker processes and real executables; the test process is the host, so
// a crash fails the run.
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExecContext } from "../../context/exec-context.js";
import type { AgentResult } from "../../types/agent.js";
import { AgentStatus } from "../../types/status.js";
import { SubprocessRuntime } from "./subprocess-runtime.js";

const here = dirname(fileURLToPath(import.meta.url));
const dir = join(here, "fixtures", "limits");
const MAX_OUTPUT_BYTES = 256 * 1024;
const FRAME_MODES = ["result", "chunk", "usage", "delegate", "error", "ready"] as const;
const KINDS = ["array", "object"] as const;

const ctx = () => ExecContext.create({ userId: "u1", sessionId: "s1", timeoutSeconds: 20 });

/** A value nested `depth` levels (arrays or objects), the way the fixtures build it. */
function nested(depth: number, kind: "array" | "object"): unknown {
  let v: unknown = kind === "array" ? [] : 1;
  if (kind === "object") for (let i = 0; i < depth; i++) v = { k: v };
  else for (let i = 1; i < depth; i++) v = [v];
  return v;
}

let runtime: SubprocessRuntime;

beforeAll(async () => {
  runtime = new SubprocessRuntime({
    handlerDir: dir,
    timeoutSeconds: 20,
    circuitBreaker: false,
    pool: { min: 1, max: 1 },
    maxOutputBytes: MAX_OUTPUT_BYTES,
  });
  await runtime.warmUp();
});
afterAll(async () => {
  await runtime.close();
});

const attack = (handler: string, args: Record<string, string>): Promise<AgentResult> =>
  runtime.invoke(handler, { message: "attack", args }, ctx());

/** The pool still serves calls: the attack left nothing broken behind. */
async function stillServes(): Promise<void> {
  const result = await runtime.invoke("echo", { message: "after" }, ctx());
  expect(result).toMatchObject({ status: AgentStatus.SUCCESS, output: "echo: after" });
}

describe("module handlers (warm pool): frames on fd 3", () => {
  it.each(FRAME_MODES.flatMap((mode) => KINDS.map((kind) => [mode, kind] as const)))(
    "a %s frame nested 20,000 levels deep (%s) ends the call with a protocol error; the worker is replaced",
    async (mode, kind) => {
      const died = runtime.stats().pool.died;
      const result = await attack("attack", { mode, kind });
      expect(result.status).toBe(AgentStatus.ERROR);
      expect(result.error).toMatch(
        /^Protocol error from the worker of "attack": Frame too complex \(nested deeper than 65 levels\)/,
      );
      expect(runtime.stats().pool.died).toBe(died + 1);
      await stillServes();
    },
  );

  it("a result whose data nests too deep, returned through the API, is refused by the worker itself", async () => {
    const died = runtime.stats().pool.died;
    for (const kind of KINDS) {
      const result = await attack("attack", { mode: "return", kind, depth: "20000" });
      expect(result).toMatchObject({ status: AgentStatus.ERROR, handler: "attack" });
      expect(result.error).toBe(
        'Handler "attack" returned an invalid result (result.data: nested deeper than 63 levels); return flatter data.',
      );
    }
    // Not a protocol error: the worker answered properly and stays in the pool.
    expect(runtime.stats().pool.died).toBe(died);
    await stillServes();
  });

  it("draws the line exactly: data nested 63 levels crosses intact, 64 is refused", async () => {
    for (const kind of KINDS) {
      // data = { x: value }: one level for data, the rest for the value.
      const ok = await attack("attack", { mode: "return", kind, depth: "62" });
      expect(ok.status).toBe(AgentStatus.SUCCESS);
      expect(ok.data).toEqual({ x: nested(62, kind) });
      const over = await attack("attack", { mode: "return", kind, depth: "63" });
      expect(over.status).toBe(AgentStatus.ERROR);
      expect(over.error).toMatch(/nested deeper than 63 levels/);
    }
  });

  it("a frame larger than maxOutputBytes + 64 KiB is dropped unread and ends the call", async () => {
    const result = await attack("attack", { mode: "huge", bytes: String(MAX_OUTPUT_BYTES * 2) });
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toMatch(/Protocol error from the worker of "attack": Frame too large/);
    await stillServes();
  });

  it("a frame cut off by the end of the channel is a protocol error, not a crash report", async () => {
    const result = await attack("attack", { mode: "partial-exit" });
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toMatch(
      /^Protocol error from the worker of "attack": Stream ended in the middle of a frame/,
    );
    await stillServes();
  });

  it("a frame for an invocation that is not running is a protocol error", async () => {
    const result = await attack("attack", { mode: "unknown-id" });
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toMatch(/Protocol error.*chunk frame for no running invocation/);
    await stillServes();
  });

  it("whatever the nesting a handler sends, the host answers and the pool keeps serving (generated)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...FRAME_MODES),
        fc.constantFrom(...KINDS),
        fc.oneof(fc.integer({ min: 66, max: 200 }), fc.integer({ min: 1000, max: 50_000 })),
        async (mode, kind, depth) => {
          const result = await attack("attack", { mode, kind, depth: String(depth) });
          expect(result.status).toBe(AgentStatus.ERROR);
          expect(result.error).toMatch(/Frame too complex/);
          await stillServes();
        },
      ),
      { numRuns: 6 },
    );
    // Six runs of up to 50,000 levels each, through a real worker: slower than one call.
  }, 60_000);
});

describe("executable handlers: fd 3 and stdout", () => {
  it.each(FRAME_MODES.flatMap((mode) => KINDS.map((kind) => [mode, kind] as const)))(
    "a %s frame nested 20,000 levels deep (%s) on the channel ends the call with a protocol error",
    async (mode, kind) => {
      const result = await attack("exec_attack", { mode, kind });
      expect(result.status).toBe(AgentStatus.ERROR);
      expect(result.error).toMatch(
        /^Protocol error on the channel of "exec_attack": Frame too complex \(nested deeper than 65 levels\)/,
      );
      await stillServes();
    },
  );

  it("stdout JSON nested too deep (in data or in output) is an error naming stdout", async () => {
    for (const mode of ["stdout-data", "stdout-output"]) {
      for (const kind of KINDS) {
        const result = await attack("exec_attack", { mode, kind });
        expect(result.status).toBe(AgentStatus.ERROR);
        expect(result.error).toMatch(
          /^Handler "exec_attack" printed a result it cannot return: Invalid stdout: nested deeper than 63 levels\./,
        );
      }
    }
  });

  it("draws the line on stdout exactly: the object plus 62 levels is fine, 63 is not", async () => {
    // The object becomes data, which nests at most 63 levels (the object is the first).
    for (const kind of KINDS) {
      const ok = await attack("exec_attack", { mode: "stdout-data", kind, depth: "62" });
      expect(ok).toMatchObject({ status: AgentStatus.SUCCESS, output: "deep" });
      expect(ok.data["d"]).toEqual(nested(62, kind));
      const over = await attack("exec_attack", { mode: "stdout-data", kind, depth: "63" });
      expect(over.status).toBe(AgentStatus.ERROR);
    }
  });

  it("a frame cut off when the channel ends is a protocol error, even after a clean exit", async () => {
    const result = await attack("exec_attack", { mode: "partial" });
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toMatch(
      /^Protocol error on the channel of "exec_attack": Stream ended in the middle of a frame/,
    );
  });

  it("a frame naming another invocation is a protocol error", async () => {
    const result = await attack("exec_attack", { mode: "unknown-id" });
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toMatch(
      /^Protocol error on the channel of "exec_attack": a chunk frame for invocation "someone-else", which is not running/,
    );
  });

  it("a frame larger than the limit on the channel is an error", async () => {
    const result = await attack("exec_attack", {
      mode: "huge",
      bytes: String(MAX_OUTPUT_BYTES * 2),
    });
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toMatch(/Protocol error on the channel of "exec_attack": Frame too large/);
  });
});

describe("executable protocol: exit code 2", () => {
  it("puts the reason the process printed in error, not only in data", async () => {
    const result = await attack("exec_attack", { mode: "decline" });
    expect(result).toEqual({
      status: AgentStatus.WRONG_HANDLER,
      output: "",
      data: { hint: "ask billing" },
      error: "not my job",
      handler: "exec_attack",
    });
  });

  it("says the handler declined when it printed no reason", async () => {
    const result = await attack("exec_attack", { mode: "decline-silent" });
    expect(result).toMatchObject({
      status: AgentStatus.WRONG_HANDLER,
      error: 'Handler "exec_attack" declined the request (exit code 2).',
    });
  });
});

describe("a host process of its own (no test runner to catch what escapes)", () => {
  it("survives deep frames from a worker and an executable, and exits normally", async () => {
    const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
    const url = (file: string) => JSON.stringify(pathToFileURL(join(here, file)).href);
    const script = `
      import { ExecContext } from ${url("../../context/exec-context.ts")};
      import { SubprocessRuntime } from ${url("subprocess-runtime.ts")};
      const runtime = new SubprocessRuntime({ handlerDir: ${JSON.stringify(dir)}, pool: { min: 1, max: 1 } });
      const statuses = [];
      for (const handler of ["attack", "exec_attack", "echo"]) {
        const r = await runtime.invoke(handler, { message: "x", args: { mode: "result" } }, ExecContext.create());
        statuses.push(r.status);
      }
      await runtime.close();
      console.log(JSON.stringify(statuses));
    `;
    const host = spawn(process.execPath, ["--import", tsx, "--input-type=module", "-e", script], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    host.stdout.on("data", (d: Buffer) => (out += d.toString()));
    host.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((resolve) => host.on("exit", resolve));
    expect({ code, err: err.includes("RangeError") ? err.slice(0, 300) : "" }).toEqual({
      code: 0,
      err: "",
    });
    expect(JSON.parse(out.trim())).toEqual(["error", "error", "success"]);
  }, 30_000);
});
