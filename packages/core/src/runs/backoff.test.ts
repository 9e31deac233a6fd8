import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { retryDelaySeconds } from "./backoff.js";
import { notJson, toJsonText } from "./json-value.js";

const policy = (o: Partial<Parameters<typeof retryDelaySeconds>[0]> = {}) => ({
  maxAttempts: 5,
  initialDelaySeconds: 1,
  backoffFactor: 2,
  maxDelaySeconds: 60,
  jitter: 0,
  ...o,
});

describe("retryDelaySeconds", () => {
  it("follows min(max, initial × factor^(n−1)) without jitter", () => {
    expect([1, 2, 3, 4, 7, 8].map((n) => retryDelaySeconds(policy(), n))).toEqual([
      1, 2, 4, 8, 60, 60,
    ]);
  });

  it("shortens each delay by at most `jitter` of it", () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 100, noNaN: true }),
        fc.double({ min: 1, max: 10, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.integer({ min: 1, max: 30 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (initial, factor, jitter, n, u) => {
          const p = policy({
            initialDelaySeconds: initial,
            backoffFactor: factor,
            jitter,
            maxDelaySeconds: 300,
          });
          const base = Math.min(300, initial * factor ** (n - 1));
          const d = retryDelaySeconds(p, n, () => u);
          expect(d).toBeLessThanOrEqual(base + 1e-9);
          expect(d).toBeGreaterThanOrEqual(base * (1 - jitter) - 1e-9);
        },
      ),
    );
  });
});

describe("toJsonText", () => {
  it("accepts plain JSON and reads back equal", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const text = toJsonText(v, "value", 1 << 20, "");
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(v)));
      }),
    );
  });

  it("accepts exactly the values made of plain objects, arrays and JSON leaves", () => {
    // The reference rule, written plainly (recursive: fast-check values are shallow).
    const plain = (v: unknown): boolean => {
      if (v === null || typeof v === "string" || typeof v === "boolean") return true;
      if (typeof v === "number") return Number.isFinite(v);
      if (typeof v !== "object") return false;
      if (Array.isArray(v)) return v.every((x) => plain(x)); // holes are skipped, as JSON nulls
      const proto: unknown = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null) return false;
      return Object.values(v).every(plain);
    };
    fc.assert(
      fc.property(
        fc.anything({
          withBigInt: true,
          withDate: true,
          withMap: true,
          withSet: true,
          withTypedArray: true,
          withSparseArray: true,
          withNullPrototype: true,
          withBoxedValues: true,
        }),
        (v) => {
          expect(notJson(v, "v") === null).toBe(plain(v));
        },
      ),
      { numRuns: 500 },
    );
  });

  it("names what is not JSON", () => {
    expect(notJson({ a: [1, new Date(0)] }, "value")).toBe(
      "value.a[1] is a Date, not a plain object",
    );
    expect(notJson({ n: NaN }, "v")).toMatch(/v\.n is NaN/);
    expect(notJson({ f: () => 1 }, "v")).toMatch(/v\.f is a function/);
    expect(notJson([undefined], "v")).toMatch(/v\[0\] is undefined/);
    expect(notJson(10n, "v")).toMatch(/bigint/);
  });

  it("refuses values over the byte bound and deep nesting with INVALID_INPUT", () => {
    expect(() => toJsonText("x".repeat(20), "step", 10, "Fix.")).toThrow(
      /over maxStepBytes \(10\)/,
    );
    let deep: unknown = 1;
    for (let i = 0; i < 100; i++) deep = [deep];
    expect(() => toJsonText(deep, "step", 1 << 20, "")).toThrow(/nested deeper/);
  });
});
