import { describe, expect, it } from "vitest";
import { runDemo } from "./demo.js";

describe("demo app", () => {
  it("runs invoke, chain, delegate, streaming and a timeout, and prints the span tree", async () => {
    const { results, streamed, lines, ctx } = await runDemo();
    expect(results["invoke"]).toMatchObject({
      status: "success",
      output: "Trip to Berlin: you are free on Tuesday 10:00",
    });
    expect(results["chain"]).toMatchObject({ status: "success", output: "Options: LH123,BA456" });
    expect(results["delegate"]).toMatchObject({
      status: "success",
      output: "free on Monday 09:00",
    });
    expect(results["stream"]?.output).toBe("tokens arrive one by one ");
    expect(results["timeout"]?.status).toBe("timeout");
    expect(streamed).toEqual(["tokens ", "arrive ", "one ", "by ", "one "]);
    expect(ctx.tokenUsage.totalTokens).toBe(120 + 30 + 40 + 12 + 40 + 12);
    const text = lines.join("\n");
    expect(text).toMatch(/^demo \(\d+\.\d+ms\)$/m);
    expect(text).toMatch(/^└─ runtime\.invoke travel_agent|├─ runtime\.invoke travel_agent/m);
    expect(text).toMatch(/delegate calendar_agent \(\d+\.\d+ms\)/);
    expect(text).toMatch(/calendar\.lookup \(\d+\.\d+ms\)/);
    expect(text).toMatch(
      /runtime\.invoke slow_agent \(\d+\.\d+ms\) ✗ Handler "slow_agent" timed out/,
    );
  });
});
