import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";

const here = dirname(fileURLToPath(import.meta.url));
const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
const src = (path: string) => JSON.stringify(pathToFileURL(join(here, "..", path)).href);

/** Runs `body` as an ES module script with top-level await; resolves with its exit and output. */
function runScript(body: string): Promise<{ code: number | null; out: string }> {
  const script = `
    import { ExecContext } from ${src("context/exec-context.ts")};
    import { InProcessRuntime } from ${src("runtime/in-process-runtime.ts")};
    ${body}
  `;
  const child = spawn(process.execPath, ["--import", tsx, "--input-type=module", "-e", script], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  return new Promise((resolve) => child.on("exit", (code) => resolve({ code, out: out.trim() })));
}

describe("deadlines in a script with nothing else to do", () => {
  it("an invoke of a hung handler keeps the process alive until its TIMEOUT result", async () => {
    // The handler waits on a promise that never settles and holds no handle of its own. Before,
    // the deadline timer was unref'd: the process exited 13 (unsettled top-level await).
    const { code, out } = await runScript(`
      const runtime = new InProcessRuntime({ timeoutSeconds: 0.3 });
      runtime.register("hung", () => new Promise(() => {}));
      const started = Date.now();
      const result = await runtime.invoke("hung", { message: "" }, ExecContext.create());
      console.log(result.status, Date.now() - started >= 250);
    `);
    expect({ code, out }).toEqual({ code: 0, out: "timeout true" });
  }, 30_000);

  it("a context with a deadline but no invoke in flight does not hold the process", async () => {
    const started = Date.now();
    const { code, out } = await runScript(`
      const ctx = ExecContext.create({ timeoutSeconds: 60 });
      ctx.signal.addEventListener("abort", () => console.log("aborted"));
      console.log("done");
    `);
    expect({ code, out }).toEqual({ code: 0, out: "done" });
    expect(Date.now() - started).toBeLessThan(20_000);
  }, 30_000);
});
