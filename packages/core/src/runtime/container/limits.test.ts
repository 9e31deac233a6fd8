// Attacks on the host through what a container sends back: frames nested thousands of levels
// deep on the agent's frame stream, an oversized frame, a frame cut off by the exit, a foreign
// id, deep data returned through the agent's API, deep stdout from a stdio handler, and the
// reason of a decline (exit code 2). Real containers on a real Docker engine.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExecContext } from "../../context/exec-context.js";
import type { AgentResult } from "../../types/agent.js";
import { AgentStatus } from "../../types/status.js";
import { ContainerRuntime } from "./container-runtime.js";
import { dockerTestImage } from "./test-env.test-support.js";

const image = await dockerTestImage("ContainerRuntime limit tests");
const MAX_OUTPUT_BYTES = 256 * 1024;

const ctx = () => ExecContext.create({ userId: "u1", sessionId: "s1", timeoutSeconds: 30 });

describe.skipIf(image === null)("ContainerRuntime under hostile output", () => {
  let runtime: ContainerRuntime;

  beforeAll(async () => {
    runtime = new ContainerRuntime({
      timeoutSeconds: 30,
      circuitBreaker: false,
      maxOutputBytes: MAX_OUTPUT_BYTES,
    });
    runtime.register("attack", {
      image: image as string,
      module: "/modules/attack.mjs",
      mode: "warm",
    });
    runtime.register("attack-call", { image: image as string, module: "/modules/attack.mjs" });
    runtime.register("attack-stdio", {
      image: image as string,
      command: ["node", "/handlers/attack.mjs"],
    });
    await runtime.start();
  }, 60_000);
  afterAll(async () => {
    await runtime.close();
  });

  const attack = (handler: string, args: Record<string, string>): Promise<AgentResult> =>
    runtime.invoke(handler, { message: "attack", args }, ctx());

  /** The warm pool still serves calls of the same handler after the attack. */
  async function stillServes(): Promise<void> {
    const result = await attack("attack", { mode: "echo" });
    expect(result).toMatchObject({ status: AgentStatus.SUCCESS, output: "ok: attack" });
  }

  it.each(["result", "chunk", "usage", "delegate"])(
    "a %s frame nested 20,000 levels deep ends the call with a protocol error; the pool recovers",
    async (mode) => {
      const result = await attack("attack", { mode });
      expect(result.status).toBe(AgentStatus.ERROR);
      expect(result.error).toMatch(
        /^The container of handler "attack" sent a bad frame: Frame too complex \(nested deeper than 65 levels\)/,
      );
      await stillServes();
    },
    60_000,
  );

  it("a per-call container sending a deep frame gets the same protocol error", async () => {
    const result = await attack("attack-call", { mode: "result" });
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toMatch(/sent a bad frame: Frame too complex/);
  }, 60_000);

  it("deep data returned through the API is refused by the agent itself", async () => {
    const result = await attack("attack", { mode: "return" });
    expect(result).toMatchObject({
      status: AgentStatus.ERROR,
      error:
        "Handler returned an invalid result (result.data: nested deeper than 63 levels); return flatter data.",
    });
    const within = await attack("attack", { mode: "return", depth: "62" });
    expect(within.status).toBe(AgentStatus.SUCCESS);
    await stillServes();
  }, 60_000);

  it("a frame cut off by the agent's exit is a protocol error", async () => {
    const result = await attack("attack", { mode: "partial-exit" });
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toMatch(
      /^The container of handler "attack" sent a bad frame: Stream ended in the middle of a frame/,
    );
    await stillServes();
  }, 60_000);

  it("a frame for an invocation that is not running is a protocol error", async () => {
    const result = await attack("attack", { mode: "unknown-id" });
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toMatch(/sent a "chunk" frame for no running invocation/);
    await stillServes();
  }, 60_000);

  it("a frame over maxOutputBytes + 64 KiB is dropped and ends the call", async () => {
    const result = await attack("attack", { mode: "huge", bytes: String(MAX_OUTPUT_BYTES * 2) });
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toMatch(/sent a bad frame: Frame too large/);
    await stillServes();
  }, 60_000);

  it("stdout JSON nested too deep from a stdio handler is an error naming stdout", async () => {
    for (const mode of ["stdout-data", "stdout-output"]) {
      const result = await attack("attack-stdio", { mode });
      expect(result.status).toBe(AgentStatus.ERROR);
      expect(result.error).toMatch(
        /^Handler "attack-stdio" printed a result it cannot return: Invalid stdout: nested deeper than 63 levels/,
      );
    }
  }, 60_000);

  it("a stdio handler's decline (exit code 2) carries the reason it printed in error", async () => {
    const result = await attack("attack-stdio", { mode: "decline" });
    expect(result).toEqual({
      status: AgentStatus.WRONG_HANDLER,
      output: "",
      data: { hint: "ask billing" },
      error: "not my job",
      handler: "attack-stdio",
    });
  }, 60_000);
});
