// The protobuf writer's number and string encodings against independent ones: OpenTelemetry's
// millisToHrTime for times (its serializer writes what that returns), Buffer's UTF-8 for strings.
import { millisToHrTime } from "@opentelemetry/core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ProtoWriter } from "../src/proto-writer.js";

/** What OpenTelemetry writes for epoch milliseconds `ms`: nanoseconds as an unsigned 64-bit. */
function officialNanos(ms: number): bigint {
  const [seconds, nanos] = millisToHrTime(ms);
  return BigInt(seconds) * 1_000_000_000n + BigInt(nanos);
}

const epochMs = fc.oneof(
  fc.double({ min: 0, max: 4e12, noNaN: true }),
  // Just below and at whole seconds, where ms / 1000 rounds up to the next second.
  fc
    .tuple(fc.integer({ min: 0, max: 4e9 }), fc.double({ min: 0, max: 1e-3, noNaN: true }))
    .map(([s, d]) => Math.max(0, s * 1000 - d)),
  fc.integer({ min: 0, max: 4e9 }).map((s) => s * 1000),
);

describe("ProtoWriter", () => {
  it("writes epoch milliseconds as the nanoseconds OpenTelemetry's conversion gives", () => {
    fc.assert(
      fc.property(fc.array(epochMs, { minLength: 1, maxLength: 20 }), (times) => {
        const w = new ProtoWriter(16);
        // Several in a row: the writer keeps the last second's conversion, so repeats and
        // changes of second are both exercised.
        for (const ms of times) w.epochNanos(ms);
        const buf = Buffer.from(w.take());
        expect(buf.length).toBe(8 * times.length);
        times.forEach((ms, i) => expect(buf.readBigUInt64LE(8 * i)).toBe(officialNanos(ms)));
      }),
      { numRuns: 2000 },
    );
  });

  it("writes any string as length-prefixed UTF-8, short or long, ASCII or not", () => {
    const text = fc.oneof(
      fc.string({ maxLength: 300 }),
      fc.string({ unit: "grapheme", maxLength: 100 }),
      fc.string({ unit: "binary", maxLength: 100 }),
    );
    fc.assert(
      fc.property(fc.array(text, { minLength: 1, maxLength: 6 }), (strings) => {
        const w = new ProtoWriter(8); // small: the writer grows while writing
        for (const s of strings) w.string(s);
        const buf = Buffer.from(w.take());
        let p = 0;
        for (const s of strings) {
          let len = 0;
          for (let shift = 0; ; shift += 7) {
            const b = buf[p++]!;
            len |= (b & 0x7f) << shift;
            if (b < 0x80) break;
          }
          expect(buf.subarray(p, p + len).equals(Buffer.from(s, "utf8"))).toBe(true);
          p += len;
        }
        expect(p).toBe(buf.length);
      }),
      { numRuns: 1000 },
    );
  });
});
