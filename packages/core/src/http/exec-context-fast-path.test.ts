// ExecContext.create checks the options a bridge passes on every request by hand instead of with
// zod (see isCommonOptions in context/exec-context.ts). This differential test holds the two paths
// to the same answers: `traceId: undefined` sends the same options through zod.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { NervaError } from "../errors.js";
import { Permissions } from "../types/permissions.js";

const text = (max: number) =>
  fc.oneof(
    fc.constant(""),
    fc.string({ minLength: 1, maxLength: 8 }),
    fc.constant("x".repeat(max + 1)),
  );
const field = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });

const options = fc.record(
  {
    userId: field(fc.oneof(text(256), fc.constant(null), fc.integer())),
    sessionId: field(fc.oneof(text(256), fc.constant(null))),
    permissions: field(
      fc.constantFrom(Permissions.UNRESTRICTED, Permissions.NONE, { roles: ["a"] }, "admin"),
    ),
    memoryScope: field(fc.constantFrom("user", "session", "agent", "global", "nope")),
    timeoutSeconds: field(
      fc.oneof(fc.double({ noNaN: false }), fc.constant(null), fc.constant(Infinity)),
    ),
    requestId: field(fc.oneof(text(128), fc.constant(null))),
    traceparent: field(
      fc.oneof(
        fc.constant("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        fc.string(),
        fc.constant(null),
      ),
    ),
    stream: field(fc.constantFrom(null, { push: () => undefined }, { nope: 1 })),
    bogus: field(fc.constant(1)),
  },
  { requiredKeys: [] },
);

function outcome(make: () => ExecContext): unknown {
  try {
    const ctx = make();
    return {
      userId: ctx.userId,
      sessionId: ctx.sessionId,
      memoryScope: ctx.memoryScope,
      permissions: ctx.permissions.toWire(),
      deadline: ctx.timeoutAt === null ? null : ctx.timeoutAt - ctx.createdAt,
      parentSpan: ctx.currentSpanId,
      hasStream: ctx.stream !== null,
    };
  } catch (err) {
    return { error: err instanceof NervaError ? [err.code, err.issues.map((i) => i.path)] : err };
  }
}

describe("ExecContext.create: hand-checked and zod-checked options agree", () => {
  it("gives the same context or the same error", () => {
    fc.assert(
      fc.property(options, (o) => {
        const fast = outcome(() => ExecContext.create(o as never));
        const slow = outcome(() => ExecContext.create({ ...o, traceId: undefined } as never));
        expect(fast).toEqual(slow);
      }),
      { numRuns: 2000 },
    );
  });
});
