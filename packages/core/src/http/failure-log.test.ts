import { expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { logAgentFailure } from "./failure-log.js";

it("logs the innermost failure of a delegation, once, and nothing for a success", async () => {
  const runtime = new InProcessRuntime({ circuitBreaker: false });
  runtime.register("calendar_agent", async () => {
    throw new Error("connect ECONNREFUSED 127.0.0.1:11434");
  });
  runtime.register("travel_agent", async (_input, ctx, rt) => {
    const r = await rt.delegate("calendar_agent", { message: "x" }, ctx);
    if (r.status !== "success") throw new Error(`calendar failed: ${r.error}`);
    return "ok";
  });
  runtime.register("fine", async () => "ok");
  const lines: { message: string; fields: Readonly<Record<string, unknown>> }[] = [];
  const logger = {
    error: (message: string, fields: Readonly<Record<string, unknown>>) =>
      void lines.push({ message, fields }),
  };

  const failed = ExecContext.create();
  await runtime.invoke("travel_agent", { message: "book" }, failed);
  logAgentFailure(logger, "r1", failed);
  expect(lines).toHaveLength(1);
  expect(lines[0]?.fields).toMatchObject({
    requestId: "r1",
    handler: "calendar_agent",
    status: "error",
  });
  expect(lines[0]?.message).toContain("ECONNREFUSED");

  const ok = ExecContext.create();
  await runtime.invoke("fine", { message: "hi" }, ok);
  logAgentFailure(logger, "r2", ok);
  expect(lines).toHaveLength(1);
});
