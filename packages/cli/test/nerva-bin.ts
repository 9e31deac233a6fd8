// Runs the built `nerva` bin (dist/esm/main.js) as a person does: a real process, real files.
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";

export const root = join(import.meta.dirname, "..");
export const bin = join(root, "dist", "esm", "main.js");
export const fixture = join(root, "test", "refund-desk.fixture.ts");

export function requireBuild(): void {
  if (!existsSync(bin)) throw new Error(`build @nerva/cli first: ${bin} is missing`);
}

/** Runs `nerva args` to the end with `input` on stdin. */
export function nerva(args: readonly string[], input = "", timeout = 60_000) {
  return spawnSync(process.execPath, [bin, ...args], { input, encoding: "utf8", timeout });
}

/** Starts `nerva args` and resolves once its stdout matched `ready` (or rejects when it exited). */
export function start(
  args: readonly string[],
  ready: RegExp,
): Promise<{ child: ChildProcessWithoutNullStreams; match: RegExpExecArray; out: () => string }> {
  const child = spawn(process.execPath, [bin, ...args]);
  let out = "";
  let err = "";
  return new Promise((resolve, reject) => {
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString("utf8");
      const match = ready.exec(out);
      if (match !== null) resolve({ child, match, out: () => out });
    });
    child.stderr.on("data", (d: Buffer) => (err += d.toString("utf8")));
    child.on("exit", (code) => reject(new Error(`nerva exited ${code}: ${out}${err}`)));
  });
}

/** The exit code of a started process once it ends. */
export function exited(child: ChildProcessWithoutNullStreams): Promise<number | null> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

/** An error as a person should see it: one line, no stack. */
export function oneLine(stderr: string): string {
  const lines = stderr.trimEnd().split("\n");
  if (lines.length !== 1 || /^\s+at /m.test(stderr))
    throw new Error(`expected one line on stderr, got:\n${stderr}`);
  return lines[0] as string;
}
