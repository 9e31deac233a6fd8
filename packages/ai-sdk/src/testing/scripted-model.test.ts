import "../no-network.test-support.js";
import {
  ExecContext,
  FunctionToolManager,
  InProcessRuntime,
  Orchestrator,
  RuleRouter,
  defineTool,
} from "@nerva/core";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createModel, modelAgent } from "../index.js";
import { scriptedModel } from "./index.js";

function concierge(chunkDelaySeconds = 0) {
  const runtime = new InProcessRuntime();
  const tools = new FunctionToolManager().register(
    defineTool({
      name: "search_flights",
      description: "Finds flights to a city",
      parameters: z.object({ to: z.string() }),
      run: ({ to }) => [`NV101 to ${to} at 08:15`, `NV205 to ${to} at 17:40`],
    }),
  );
  const orchestrator = new Orchestrator({
    router: new RuleRouter({ rules: [], defaultHandler: "concierge_agent" }),
    runtime,
    tools,
  });
  const model = createModel(scriptedModel({ chunkDelaySeconds }));
  runtime.register(
    "concierge_agent",
    orchestrator.handler(modelAgent({ model, system: "Concierge." })),
  );
  return orchestrator;
}

describe("scriptedModel", () => {
  it("calls search_flights for a flight question and words the answer from its result", async () => {
    const ctx = ExecContext.create();
    const response = await concierge().handle("Any flight to Lisbon tomorrow?", ctx);
    expect(response.text).toBe(
      "I found 2 flights: NV101 to Lisbon at 08:15; NV205 to Lisbon at 17:40. Shall I book one?",
    );
    expect(ctx.spans.filter((s) => s.name === "chat")).toHaveLength(2);
    expect(ctx.spans.find((s) => s.name === "tools.call")!.attributes["tool"]).toBe(
      "search_flights",
    );
    expect(ctx.tokenUsage.totalTokens).toBeGreaterThan(0);
    expect(
      ctx.spans.find((s) => s.name === "chat")!.attributes["nerva.usage.estimated"],
    ).toBeUndefined();
  });

  it("streams word by word and falls back for other messages", async () => {
    const chunks: string[] = [];
    for await (const c of concierge().stream("hello there", ExecContext.create())) chunks.push(c);
    expect(chunks.join("")).toBe(
      "I am a scripted model (no API key is set). You said: hello there",
    );
    expect(chunks.length).toBeGreaterThan(5);
  });

  it("stops streaming at once when the request is cancelled", async () => {
    const ctx = ExecContext.create();
    const chunks: string[] = [];
    const stream = concierge(0.05).stream("tell me something long", ctx);
    const started = performance.now();
    for await (const c of stream) {
      chunks.push(c);
      if (chunks.length === 2) break; // the consumer leaves: the request is cancelled
    }
    await stream.response.catch(() => undefined);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(chunks).toHaveLength(2);
  });

  it("answers by custom rules", async () => {
    const model = createModel(
      scriptedModel({ rules: [{ when: /hello/i, reply: (m) => `Hi! (${m.length})` }] }),
    );
    expect((await model.generate({ prompt: "hello" }, ExecContext.create())).text).toBe("Hi! (5)");
  });
});
