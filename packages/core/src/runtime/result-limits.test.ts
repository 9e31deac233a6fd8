// What a handler returns is validated (the schema recurses into `data`) and, in a worker,
// serialised into a frame: deep data must become a typed ERROR result naming the field, the same
// in every runtime that runs handler functions (in process here; the worker in
// subprocess/limits.test.ts).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { AgentStatus } from "../types/status.js";
import { InProcessRuntime } from "./in-process-runtime.js";

function nested(depth: number, pattern: readonly ("array" | "object")[]): unknown {
  let v: unknown = 1;
  for (let i = depth - 1; i >= 0; i--) v = pattern[i % pattern.length] === "array" ? [v] : { k: v };
  return v;
}

describe("handler results nested too deep", () => {
  it("are an ERROR naming result.data, up to 63 levels of data pass (generated)", async () => {
    const runtime = new InProcessRuntime({ circuitBreaker: false });
    let value: unknown = null;
    runtime.register("deep", async () => ({ output: "x", data: { v: value } as never }));
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.integer({ min: 0, max: 70 }), fc.integer({ min: 70, max: 50_000 })),
        fc.array(fc.constantFrom<"array" | "object">("array", "object"), {
          minLength: 1,
          maxLength: 4,
        }),
        async (depth, pattern) => {
          value = nested(depth, pattern);
          const ctx = ExecContext.create();
          const result = await runtime.invoke("deep", { message: "m" }, ctx);
          ctx.dispose();
          // data (1) > v (the value's containers).
          if (depth + 1 <= 63) {
            expect(result.status).toBe(AgentStatus.SUCCESS);
            expect(result.data).toEqual({ v: value });
          } else {
            expect(result).toMatchObject({
              status: AgentStatus.ERROR,
              error:
                'Handler "deep" returned an invalid result (result.data: nested deeper than 63 levels); return flatter data.',
            });
          }
        },
      ),
      { numRuns: 100 },
    );
  });
});
