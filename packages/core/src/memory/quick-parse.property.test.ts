import fc from "fast-check";
import { describe, it } from "vitest";
import { ActionSchema, quickAction } from "../policy/action.js";
import { EventSchema, quickEvent } from "./tiered-memory.js";

// The fast paths that skip a schema run must agree with the schema: whatever they accept, the
// schema accepts with the same result; whatever the schema rejects, they send to the schema.
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });
const junk = fc.oneof(
  fc.integer(),
  fc.constant(null),
  fc.string({ maxLength: 3 }),
  fc.constant(""),
);

function agrees(
  quick: (v: unknown) => unknown,
  schema: { safeParse(v: unknown): { success: boolean; data?: unknown } },
) {
  return (value: unknown) => {
    const fast = quick(value);
    const slow = schema.safeParse(value);
    if (fast === null) return;
    if (!slow.success)
      throw new Error(`fast path accepted what the schema rejects: ${JSON.stringify(value)}`);
    const a = JSON.stringify(fast, Object.keys(fast as object).sort());
    const b = JSON.stringify(slow.data, Object.keys(slow.data as object).sort());
    if (a !== b) throw new Error(`fast path ${a} differs from schema ${b}`);
  };
}

describe("fast-path parsing agrees with the schemas", () => {
  it("memory events", () => {
    const event = fc.record(
      {
        kind: maybe(fc.oneof(fc.constantFrom("turn", "fact", "episode"), junk)),
        content: fc.oneof(fc.string({ maxLength: 5 }), junk),
        role: maybe(fc.oneof(fc.constantFrom("user", "assistant", "system", "tool"), junk)),
        key: maybe(fc.oneof(fc.string({ maxLength: 3 }), junk)),
        metadata: maybe(fc.constant({ a: 1 })),
        scope: maybe(fc.oneof(fc.constantFrom("user", "session", "agent", "global"), junk)),
        extra: maybe(fc.constant(1)),
      },
      { requiredKeys: [] },
    );
    fc.assert(fc.property(event, agrees(quickEvent, EventSchema)), { numRuns: 2000 });
  });

  it("policy actions", () => {
    const action = fc.record(
      {
        checkpoint: fc.oneof(
          fc.constantFrom("before_route", "before_invoke", "during_execution"),
          junk,
        ),
        kind: maybe(fc.oneof(fc.constantFrom("agent", "tool", "delegate"), junk)),
        name: maybe(fc.oneof(fc.string({ maxLength: 3 }), junk)),
        message: maybe(fc.oneof(fc.string({ maxLength: 3 }), junk)),
        args: maybe(fc.constant({ a: 1 })),
        extra: maybe(fc.constant(1)),
      },
      { requiredKeys: [] },
    );
    fc.assert(fc.property(action, agrees(quickAction, ActionSchema)), { numRuns: 2000 });
  });
});
