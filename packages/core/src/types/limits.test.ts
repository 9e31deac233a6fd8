// parseAgentResult reads another implementation's JSON: nesting that would overflow the stack
// in validation must be a typed INVALID_INPUT, never a RangeError.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ErrorCode, NervaError } from "../errors.js";
import { parseAgentResult } from "./agent.js";

function nested(depth: number, pattern: readonly ("array" | "object")[]): unknown {
  let v: unknown = "leaf";
  for (let i = depth - 1; i >= 0; i--) v = pattern[i % pattern.length] === "array" ? [v] : { k: v };
  return v;
}

describe("parseAgentResult bounds", () => {
  it("accepts data up to 64 levels in all and refuses deeper with INVALID_INPUT (generated)", () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.integer({ min: 0, max: 70 }), fc.integer({ min: 70, max: 30_000 })),
        fc.array(fc.constantFrom<"array" | "object">("array", "object"), {
          minLength: 1,
          maxLength: 4,
        }),
        (depth, pattern) => {
          // result (1) > data (2) > the value.
          const wire = { status: "success", data: { v: nested(depth, pattern) } };
          if (depth + 2 <= 64) {
            expect(parseAgentResult(wire, "h").data).toEqual(wire.data);
            return;
          }
          try {
            parseAgentResult(wire, "h");
            expect.unreachable();
          } catch (err) {
            expect(err).toBeInstanceOf(NervaError);
            expect((err as NervaError).code).toBe(ErrorCode.INVALID_INPUT);
            expect((err as NervaError).message).toMatch(
              /^Invalid result: nested deeper than 64 levels/,
            );
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
