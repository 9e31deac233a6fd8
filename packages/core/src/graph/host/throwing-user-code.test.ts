// User functions that throw where the library calls them from a timer or an event callback (an
// entry point's input(), onError itself) reach onError and never end the process: a real child
// process runs them (fixtures/throwing-user-code.test-support.ts).
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";

const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
const entry = join(import.meta.dirname, "fixtures", "throwing-user-code.test-support.ts");

/** Runs the fixture; resolves with its exit code, stdout report and stderr. */
async function runFixture(onErrorThrows: boolean) {
  const child = spawn(process.execPath, ["--import", tsx, entry], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, NERVA_TEST_ON_ERROR_THROWS: onErrorThrows ? "1" : "0" },
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
  expect(code, err).toBe(0);
  return { report: JSON.parse(out.trim()) as { told: string[]; alive: string }, err };
}

const TOLD = expect.arrayContaining([
  expect.stringMatching(
    /^Entry point "tick": its input\(\{ slot: \d+ \}\) threw "timer input broke"/,
  ),
  expect.stringMatching(
    /^Entry point "react": its input\(event run\.succeeded\) threw "event input broke"/,
  ),
]);

describe("user functions called from timers and events", () => {
  it("a timer's and an event's throwing input() reach onError; the process lives on", async () => {
    const { report, err } = await runFixture(false);
    expect(report.alive).toBe("succeeded");
    expect(report.told).toEqual(TOLD);
    expect(err).not.toContain("NERVA_ON_ERROR");
  }, 30_000);

  it("an onError that throws too is reported once as a warning and ends nothing", async () => {
    const { report, err } = await runFixture(true);
    expect(report.alive).toBe("succeeded");
    expect(report.told).toEqual(TOLD);
    expect(err).toContain("NERVA_ON_ERROR");
    expect(err.match(/onError broke too/g)).toHaveLength(1);
  }, 30_000);
});
