// An orchestrator without a router sends every message to the runtime's only handler; with
// several handlers (or none) it asks for a router instead of guessing.
import { describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { Orchestrator } from "./orchestrator.js";

describe("Orchestrator without a router", () => {
  it("routes to the only handler, streaming too", async () => {
    const runtime = new InProcessRuntime();
    runtime.register("echo", async (input) => `Echo: ${input.message}`);
    const orchestrator = new Orchestrator({ runtime });
    const ctx = ExecContext.create();
    const response = await orchestrator.handle("hi", ctx);
    expect(response).toMatchObject({ text: "Echo: hi", handler: "echo" });
    const chunks: string[] = [];
    for await (const c of orchestrator.stream("there", ExecContext.create()))
      chunks.push(String(c));
    expect(chunks.join("")).toContain("Echo: there");
  });

  it("asks for a router when the runtime has several handlers, or none", async () => {
    const runtime = new InProcessRuntime();
    const orchestrator = new Orchestrator({ runtime });
    await expect(orchestrator.handle("hi", ExecContext.create())).rejects.toMatchObject({
      code: "INVALID_OPTIONS",
      message: expect.stringMatching(/has none/),
    });
    runtime.register("a", async () => "a");
    runtime.register("b", async () => "b");
    await expect(orchestrator.handle("hi", ExecContext.create())).rejects.toMatchObject({
      code: "INVALID_OPTIONS",
      message: expect.stringMatching(/has 2 \(a, b\)\. Register one handler, or pass a router/),
    });
  });

  it("takes its agents by name, each with the kit, instead of a runtime", async () => {
    const orchestrator = new Orchestrator({
      agents: {
        echo: async (input, _ctx, kit) =>
          `Echo: ${input.message} (${typeof kit.tools.call === "function" ? "kit" : "none"})`,
      },
    });
    expect(orchestrator.runtime.handlerNames()).toEqual(["echo"]);
    const response = await orchestrator.handle("hi", ExecContext.create());
    expect(response).toMatchObject({ text: "Echo: hi (kit)", handler: "echo" });
    expect(() => new Orchestrator({})).toThrow(/exactly one of runtime .* or agents/);
    expect(
      () => new Orchestrator({ runtime: new InProcessRuntime(), agents: { a: async () => "a" } }),
    ).toThrow(/exactly one of runtime .* or agents/);
    expect(() => new Orchestrator({ agents: { a: "nope" as never } })).toThrow(
      /options\.agents\.a: each agent is a function/,
    );
  });
});
