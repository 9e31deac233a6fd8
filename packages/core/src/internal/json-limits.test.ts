import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { NervaError } from "../errors.js";
import { checkUntrustedJson, jsonLimitViolation } from "./json-limits.js";

const nest = (depth: number): unknown => {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = i % 2 === 0 ? [v] : { k: v };
  return v;
};

describe("jsonLimitViolation", () => {
  it("accepts primitives and values within the limits", () => {
    expect(jsonLimitViolation("x")).toBeNull();
    expect(jsonLimitViolation(nest(64))).toBeNull();
    expect(
      jsonLimitViolation({ a: [1, 2, { b: null }] }, { maxDepth: 3, maxNodes: 10 }),
    ).toBeNull();
  });

  it("refuses deep nesting without recursing, however deep", () => {
    expect(jsonLimitViolation(nest(65))).toMatch(/deeper than 64/);
    // JSON.parse is iterative in V8; a million levels parse fine and must be refused, not crash.
    const text = "[".repeat(1_000_000) + "]".repeat(1_000_000);
    expect(jsonLimitViolation(JSON.parse(text))).toMatch(/deeper than 64/);
  });

  it("refuses too many values and cycles", () => {
    expect(jsonLimitViolation(new Array(11).fill(0), { maxDepth: 5, maxNodes: 10 })).toMatch(
      /more than 10 values/,
    );
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(jsonLimitViolation(cyclic)).toMatch(/deeper than/);
  });

  it("agrees with a recursive depth count on generated JSON", () => {
    const depthOf = (v: unknown): number =>
      typeof v !== "object" || v === null
        ? 0
        : 1 + Math.max(0, ...Object.values(v as object).map(depthOf));
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), fc.integer({ min: 1, max: 8 }), (v, max) => {
        const violation = jsonLimitViolation(v, { maxDepth: max, maxNodes: 1e9 });
        expect(violation === null).toBe(depthOf(v) <= max);
      }),
    );
  });

  it("checkUntrustedJson throws INVALID_INPUT naming the label", () => {
    try {
      checkUntrustedJson(nest(100), "frame.result", "Send flatter JSON.");
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(NervaError);
      expect((err as NervaError).code).toBe("INVALID_INPUT");
      expect((err as NervaError).message).toMatch(/^Invalid frame\.result: nested deeper than 64/);
    }
  });
});
