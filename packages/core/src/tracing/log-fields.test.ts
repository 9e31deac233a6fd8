import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { eventJson, eventLine, isoTime, spanJson, spanLine } from "./log-fields.js";

const text = fc.string({ unit: "binary", minLength: 1, maxLength: 40 });
const value = fc.oneof(
  text,
  fc.double(),
  fc.integer(),
  fc.boolean(),
  fc.constantFrom(Number.NaN, Infinity, -0),
);

describe("the hand-written JSON lines", () => {
  it("are the text JSON.stringify writes for the same span, whatever it holds", () => {
    fc.assert(
      fc.property(
        fc.record({
          name: text,
          attrs: fc.dictionary(text, value, { maxKeys: 5 }),
          error: fc.option(text, { nil: undefined }),
          // A parent that came from another process: any id of up to 128 characters.
          remoteParent: fc.option(fc.string({ unit: "binary", minLength: 1, maxLength: 128 })),
          requestId: fc.string({ unit: "binary", minLength: 1, maxLength: 128 }),
          prompt: fc.nat({ max: 1e6 }),
          completion: fc.nat({ max: 1e6 }),
          cost: fc.double({ min: 0, max: 100, noNaN: true }),
          eventName: text,
        }),
        (r) => {
          const ctx =
            r.remoteParent === null
              ? ExecContext.create({ requestId: r.requestId })
              : ExecContext.fromWire({
                  ...ExecContext.create({ requestId: r.requestId }).toWire(),
                  span_id: r.remoteParent,
                });
          const span = ctx.startSpan(r.name, r.attrs);
          const inner = ctx.fork({ span });
          inner.recordTokens({
            promptTokens: r.prompt,
            completionTokens: r.completion,
            costUsd: r.cost,
          });
          const event = inner.event(r.eventName, r.attrs);
          const outer = ctx.event(r.eventName);
          span.end(r.error === undefined ? "ok" : "error", r.error);
          expect(spanJson(span)).toBe(JSON.stringify(spanLine(span)));
          expect(eventJson(event)).toBe(JSON.stringify(eventLine(event)));
          expect(eventJson(outer)).toBe(JSON.stringify(eventLine(outer)));
          expect(() => JSON.parse(spanJson(span)) as unknown).not.toThrow();
        },
      ),
      { numRuns: 300 },
    );
  });

  it("write timestamps as toISOString does", () => {
    fc.assert(
      fc.property(fc.double({ min: 0, max: 4e12, noNaN: true }), (ms) => {
        expect(isoTime(ms)).toBe(new Date(ms).toISOString());
      }),
      { numRuns: 2000 },
    );
    for (const ms of [0, 999, 1000, 1_700_000_000_000, 1_700_000_000_000.999, 1_700_000_000_010]) {
      expect(isoTime(ms)).toBe(new Date(ms).toISOString());
    }
  });
});
