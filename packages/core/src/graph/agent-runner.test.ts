import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { NervaError } from "../errors.js";
import { AgentRunner, EventType } from "./index.js";

const module = join(import.meta.dirname, "fixtures", "refund-desk.test-support.ts");

describe("AgentRunner", () => {
  it("loads a module (graph + handlers + config), runs, pauses and resumes by sessionState; await using cleans up", async () => {
    let runtimeRef: AgentRunner["runtime"] | undefined;
    {
      await using runner = await AgentRunner.load(module);
      runtimeRef = runner.runtime;
      const deltas: string[] = [];
      runner.runtime.subscribe(
        [EventType.CLIENT_OUTPUT_DELTA],
        (e) => void deltas.push(String(e.data.chunk)),
      );
      const paused = await runner.run({ orderId: "7" });
      expect(paused).toMatchObject({
        status: "paused",
        pausedAt: "review",
        state: { orderId: "7", total: 42 },
      });
      expect(paused.request?.prompt).toBe("Refund 42 for order 7? (approved/declined)");
      const done = await runner.run(
        { decision: "approved" },
        { sessionState: paused.sessionState },
      );
      expect(done).toMatchObject({ status: "completed", output: "refunded order 7" });
      expect(deltas.join("")).toBe("Looking up order 7...\n");
      expect(runner.getEntryPoints().map((e) => e.id)).toEqual(["default"]);
      expect(runtimeRef.isRunning).toBe(true);
    }
    expect(runtimeRef?.isRunning).toBe(false);
  });

  it("refuses a module without a graph and a bad config", async () => {
    await expect(AgentRunner.load({} as never)).rejects.toThrow(
      /exports no graph made by defineGraph/,
    );
    const mod = await import(module);
    const err = await AgentRunner.load(mod, { store: { redis: "x" } as never }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(NervaError);
    expect((err as NervaError).message).toMatch(/config.store/);
  });
});
