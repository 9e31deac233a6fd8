import { describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { AgentInputSchema } from "../types/agent.js";
import { plainEnqueue, plainInput } from "./enqueue-check.js";
import { EnqueueOptionsSchema } from "./options.js";

const ctx = ExecContext.create();

describe("enqueue checks that skip the schemas", () => {
  it("give back what the schema gives for the options they accept", () => {
    const cases = [
      { handler: "h", input: { message: "m" }, ctx },
      { handler: "a.b:c-d_1", input: {}, ctx, priority: 3, delaySeconds: 0.5, timeoutSeconds: 2 },
      { handler: "h", input: null, ctx, idempotencyKey: "k", maxReclaims: 0 },
    ];
    for (const c of cases) expect(plainEnqueue(c)).toEqual(EnqueueOptionsSchema.parse(c));
  });

  it("leave to the schema whatever it refuses (and the cases they do not cover)", () => {
    const cases: unknown[] = [
      null,
      { handler: "h", input: {}, ctx: {} },
      { handler: "-bad", input: {}, ctx },
      { handler: "h", input: {}, ctx, priority: 1.5 },
      { handler: "h", input: {}, ctx, delaySeconds: -1 },
      { handler: "h", input: {}, ctx, timeoutSeconds: 0 },
      { handler: "h", input: {}, ctx, idempotencyKey: "" },
      { handler: "h", input: {}, ctx, maxReclaims: 1001 },
      { handler: "h", input: {}, ctx, typo: 1 },
      { handlers: ["h"], input: {}, ctx },
      { handler: "h", input: {}, ctx, retry: { maxAttempts: 1 } },
    ];
    for (const c of cases) expect(plainEnqueue(c)).toBeNull();
  });

  it("read a plain input as AgentInputSchema does, and leave the rest to it", () => {
    for (const i of [
      { message: "m" },
      { message: "m", args: { a: "b" }, tools: [], history: [] },
    ]) {
      expect({ ...plainInput(i) }).toEqual(AgentInputSchema.parse(i));
    }
    for (const i of [
      { message: 1 },
      { message: "m", args: { a: 1 } },
      { message: "m", tools: [{ a: "b" }] },
      { message: "m", extra: true },
      { message: "x".repeat(1_000_001) },
    ]) {
      expect(plainInput(i)).toBeNull();
    }
  });
});
