import { ExecContext } from "@nerva/core";
import { describe, expect, it } from "vitest";
import { createOrchestrator } from "./agents.js";
import { exampleModel } from "./concierge.js";

describe("the example apps' model mode", () => {
  it("picks OpenAI, Anthropic or the scripted model from the environment (no call is made)", async () => {
    expect((await exampleModel({})).label).toMatch(/^scripted/);
    expect((await exampleModel({})).model.id).toBe("nerva/scripted-1");
    expect((await exampleModel({ OPENAI_API_KEY: "sk-x" })).label).toBe("openai/gpt-4o-mini");
    expect((await exampleModel({ OPENAI_API_KEY: "sk-x", NERVA_MODEL: "gpt-4.1" })).model.id).toBe(
      "openai/gpt-4.1",
    );
    expect((await exampleModel({ ANTHROPIC_API_KEY: "k" })).model.id).toBe(
      "anthropic/claude-haiku-4-5",
    );
  });

  it("the concierge takes what the rules do not match, and calls search_flights for flight questions", async () => {
    const { model } = await exampleModel({});
    const { orchestrator, close } = createOrchestrator({ concierge: model });
    try {
      const ctx = ExecContext.create({ userId: "alice" });
      const plane = await orchestrator.handle("Is there a plane to Oslo on Friday?", ctx);
      expect(plane).toMatchObject({ status: "success", handler: "concierge_agent" });
      expect(plane.text).toContain("NV101 to Oslo at 08:15");
      expect(ctx.spans.filter((s) => s.name === "chat")).toHaveLength(2);

      const chunks: string[] = [];
      for await (const c of orchestrator.stream(
        "What can you do?",
        ExecContext.create({ userId: "alice" }),
      )) {
        chunks.push(c);
      }
      expect(chunks.length).toBeGreaterThan(3);
      expect(chunks.join("")).toContain("You said: What can you do?");

      // The rules still win where they match.
      const flight = await orchestrator.handle(
        "Find me a flight to Lisbon",
        ExecContext.create({ userId: "alice" }),
      );
      expect(flight.handler).toBe("flight_agent");
      const echo = await orchestrator.handle("echo this", ExecContext.create({ userId: "alice" }));
      expect(echo.handler).toBe("echo_agent");
    } finally {
      await close();
    }
  });

  it("without a model, the demo is unchanged", async () => {
    const { orchestrator, close } = createOrchestrator();
    try {
      const r = await orchestrator.handle("hello there", ExecContext.create({ userId: "alice" }));
      expect(r).toMatchObject({ handler: "echo_agent", text: "alice, you said: hello there" });
    } finally {
      await close();
    }
  });
});
