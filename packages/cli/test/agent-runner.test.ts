import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  END,
  ExecContext,
  InProcessRuntime,
  NervaError,
  RunEventType,
  agentNode,
  defineGraph,
} from "@nerva/core";
import { MemoryTraceSink } from "@nerva/core/tracing";
import { AgentRunner } from "../src/agent-runner.js";

const module = join(import.meta.dirname, "refund-desk.fixture.ts");

/** What `promise` rejected with, as a NervaError (fails the test if it resolved or threw another). */
async function rejection(promise: Promise<unknown>): Promise<NervaError> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(NervaError);
  return err as NervaError;
}

describe("AgentRunner", () => {
  it("loads a module (graph + handlers + config), runs, pauses and resumes by sessionState; await using cleans up", async () => {
    let runtimeRef: AgentRunner["runtime"] | undefined;
    {
      await using runner = await AgentRunner.load(module);
      runtimeRef = runner.runtime;
      const deltas: string[] = [];
      runner.runtime.subscribe(
        [RunEventType.OUTPUT_DELTA],
        (e) => void deltas.push(String(e.data.chunk)),
      );
      const paused = await runner.run({ orderId: "7" });
      expect(paused).toMatchObject({
        status: "paused",
        pausedAt: "review",
        state: { orderId: "7", total: 42 },
      });
      expect(paused.pause?.prompt).toBe("Refund 42 for order 7? (approved/declined)");
      const done = await runner.resume(paused.sessionState!, "approved");
      expect(done).toMatchObject({ status: "succeeded", output: "refunded order 7" });
      expect(deltas.join("")).toBe("Looking up order 7...\nfound.");
      expect(runner.getEntryPoints().map((e) => e.id)).toEqual(["default"]);
      expect(runtimeRef.isRunning).toBe(true);
    }
    expect(runtimeRef?.isRunning).toBe(false);
  });

  it("refuses a module without a graph and a bad config", async () => {
    await expect(AgentRunner.load({} as never)).rejects.toThrow(/it exports no graph\./);
    const mod = await import(module);
    // Graph-shaped is not enough: a copy with its own fields, not made by defineGraph.
    const lookalike = { graph: { nodes: new Map(mod.graph.nodes), entry: "lookup" } };
    const err1 = await rejection(AgentRunner.load(lookalike as never));
    expect(err1.code).toBe("INVALID_OPTIONS");
    expect(err1.message).toMatch(/its graph was not made by defineGraph/);
    expect((await rejection(AgentRunner.load(null as never))).code).toBe("INVALID_OPTIONS");
    expect((await rejection(AgentRunner.load(mod, null as never))).code).toBe("INVALID_OPTIONS");
    const err = await AgentRunner.load(mod, { store: { redis: "x" } as never }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(NervaError);
    expect((err as NervaError).message).toMatch(/config.store/);
  });

  it("passes its traceSink to the GraphHost: the nodes' spans reach it in the caller's trace", async () => {
    const agents = new InProcessRuntime().register("answer_agent", async () => "42");
    const graph = defineGraph({
      name: "desk",
      state: z.object({ answer: z.string().optional() }),
      nodes: { answer: agentNode("answer_agent", { writes: "answer" }) },
      edges: [["answer", END]],
      entry: "answer",
    });
    const sink = new MemoryTraceSink();
    await using runner = await AgentRunner.load({ graph, runtime: agents }, { traceSink: sink });
    const ctx = ExecContext.create();
    expect((await runner.run({}, { ctx })).status).toBe("succeeded");
    expect(sink.trace(ctx.traceId).filter((s) => s.name === "graph.node")).toHaveLength(1);
  });
});
