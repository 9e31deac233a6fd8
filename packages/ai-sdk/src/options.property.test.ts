import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CallOptionsSchema, isPlainCall } from "./options.js";

// Values of every kind, so that each key sees right and wrong types.
const anything = fc.oneof(
  fc.string(),
  fc.integer({ min: -5, max: 200 }),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
  fc.constant(() => undefined),
  fc.array(fc.string(), { maxLength: 2 }),
  fc.dictionary(fc.string(), fc.string(), { maxKeys: 2 }),
);
const keys = fc.constantFrom(
  "prompt",
  "system",
  "tools",
  "maxSteps",
  "maxOutputTokens",
  "temperature",
  "beforeStep",
  "messages",
  "output",
  "seed",
  "unknown",
);

describe("the fast path of call options", () => {
  it("accepts only what the schema accepts", () => {
    fc.assert(
      fc.property(fc.dictionary(keys, anything, { maxKeys: 5 }), (options) => {
        if (isPlainCall(options)) expect(CallOptionsSchema.safeParse(options).success).toBe(true);
      }),
      { numRuns: 5_000 },
    );
  });

  it("takes the common shapes", () => {
    expect(isPlainCall({ prompt: "hi" })).toBe(true);
    expect(
      isPlainCall({ system: "s", prompt: "hi", tools: {}, maxSteps: 5, beforeStep: () => 1 }),
    ).toBe(true);
    expect(isPlainCall({ messages: [] })).toBe(false); // the schema checks messages
    expect(isPlainCall({ prompt: "hi", maxSteps: 0 })).toBe(false);
  });
});
