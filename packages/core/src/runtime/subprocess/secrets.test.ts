// A child that prints its configured secrets to stderr: the values the app set in `env.set`, and
// host variables it passed whose names say they are credentials, are masked by their own values
// (no known key shape needed) in the result's error and `data.stderr`, for module workers and
// executables alike. Real child processes.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExecContext } from "../../context/exec-context.js";
import { AgentStatus } from "../../types/status.js";
import { SubprocessRuntime } from "./subprocess-runtime.js";

const dir = mkdtempSync(join(tmpdir(), "nerva-secrets-"));
const SET = `plain words ${Date.now()} not shaped like any key`;
const PASSED = `p4ss-${process.pid}-${Date.now()}`;
const PATHLIKE = "/opt/nerva-fixture/bin";

let runtime: SubprocessRuntime;
beforeAll(() => {
  writeFileSync(
    join(dir, "leak_module.mjs"),
    `export default async function leak() {
      console.error("creds: " + process.env.SERVICE_CREDS + " / " + process.env.UPSTREAM_TOKEN + " in " + process.env.NERVA_FIXTURE_PATH);
      console.error("prefix only: " + process.env.UPSTREAM_TOKEN.slice(0, 12));
      throw new Error("boom " + process.env.SERVICE_CREDS);
    }\n`,
  );
  const sh = join(dir, "leak_exec.sh");
  writeFileSync(
    sh,
    `#!/bin/sh\necho "creds: $SERVICE_CREDS / $UPSTREAM_TOKEN in $NERVA_FIXTURE_PATH" >&2\nexit 3\n`,
  );
  chmodSync(sh, 0o755);
  process.env["UPSTREAM_TOKEN"] = PASSED;
  process.env["NERVA_FIXTURE_PATH"] = PATHLIKE;
  runtime = new SubprocessRuntime({
    handlerDir: dir,
    timeoutSeconds: 10,
    circuitBreaker: false,
    pool: { min: 0 },
    env: {
      allow: ["PATH", "UPSTREAM_TOKEN", "NERVA_FIXTURE_PATH"],
      set: { SERVICE_CREDS: SET },
    },
  });
});
afterAll(async () => {
  await runtime.close();
  delete process.env["UPSTREAM_TOKEN"];
  delete process.env["NERVA_FIXTURE_PATH"];
  rmSync(dir, { recursive: true, force: true });
});

describe("SubprocessRuntime masks configured secrets in what it quotes of a child", () => {
  it.each(["leak_exec", "leak_module"])("%s", async (handler) => {
    const ctx = ExecContext.create();
    const result = await runtime.invoke(handler, { message: "x" }, ctx);
    expect(result.status).toBe(AgentStatus.ERROR);
    const quoted = JSON.stringify([result, ctx.spans, ctx.events]);
    expect(quoted).toContain("creds: [redacted] / [redacted]");
    expect(quoted).not.toContain(SET);
    expect(quoted).not.toContain(PASSED);
    expect(quoted).not.toContain(PASSED.slice(0, 12));
    // A host variable passed through whose name says nothing of a secret is quoted as it is.
    expect(String(result.data["stderr"])).toContain(PATHLIKE);
  });
});
