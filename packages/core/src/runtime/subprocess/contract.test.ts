import { execFileSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describeRuntimeContract } from "../../testing/index.js";
import { SubprocessRuntime } from "./subprocess-runtime.js";

const fixtures = join(dirname(fileURLToPath(import.meta.url)), "fixtures");

/**
 * The directory of the real python3 binary, put first on the children's PATH: a version-manager
 * shim (pyenv) costs ~80 ms per start, too slow for 20 concurrent calls under a 0.5 s timeout.
 */
function pythonDir(): string {
  const exe = execFileSync("python3", ["-c", "import sys; print(sys.executable)"], {
    encoding: "utf8",
  }).trim();
  return dirname(exe);
}

/**
 * The runtime's default timeout is the contract's (0.5 s), which `slow` keeps, so the timeout
 * tests run against it. The handlers that should finish get 30 s of their own: the contract
 * starts 20 calls at once, and on a loaded machine (two busy cores) starting that many processes
 * took longer than 0.5 s, which failed a call that has nothing to do with a deadline.
 */
const FINISHING = ["echo", "fail", "decline", "stream", "delegator", "context", "usage"];
const handlers = Object.fromEntries(FINISHING.map((name) => [name, { timeoutSeconds: 30 }]));

describeRuntimeContract(
  "SubprocessRuntime (module handlers, warm pool)",
  async ({ timeoutSeconds }) => {
    const runtime = new SubprocessRuntime({
      handlerDir: join(fixtures, "modules"),
      timeoutSeconds,
      handlers,
      pool: { min: 2, max: 2 },
    });
    await runtime.warmUp();
    return { runtime };
  },
);

describeRuntimeContract("SubprocessRuntime (executable handlers)", async ({ timeoutSeconds }) => {
  const runtime = new SubprocessRuntime({
    handlerDir: join(fixtures, "executables"),
    timeoutSeconds,
    handlers,
    env: { set: { PATH: `${pythonDir()}:/usr/bin:/bin` } },
  });
  return { runtime };
});
