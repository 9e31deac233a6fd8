import { describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { formatSpanTree } from "./span-tree.js";

describe("formatSpanTree", () => {
  it("draws children under parents with durations and errors", async () => {
    const ctx = ExecContext.create();
    await ctx.span("handle", async (inner) => {
      await inner.span("router.classify", async () => undefined);
      await inner.span(
        "runtime.invoke",
        async (deeper) => {
          deeper.startSpan("tools.call", { handler: "search" }).end("error", "denied");
        },
        { handler: "flight_agent" },
      );
    });
    const lines = formatSpanTree(ctx.spans).split("\n");
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(/^handle \(\d+\.\d\dms\)$/);
    expect(lines[1]).toMatch(/^├─ router\.classify \(/);
    expect(lines[2]).toMatch(/^└─ runtime\.invoke flight_agent \(/);
    expect(lines[3]).toMatch(/^ {3}└─ tools\.call search \(\d+\.\d\dms\) ✗ denied$/);
  });

  it("shows open spans and treats unknown parents as roots", () => {
    const ctx = ExecContext.create({
      traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    });
    ctx.startSpan("still.running");
    expect(formatSpanTree(ctx.spans)).toBe("still.running (open)");
  });
});
