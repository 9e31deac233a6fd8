import { describe, expect, it } from "vitest";
import { nextCronSlot, parseCron } from "./schedule.js";

describe("timer schedules", () => {
  it("finds the next cron slot in UTC and refuses malformed expressions", () => {
    const at = Date.UTC(2026, 0, 1, 2, 59, 30);
    expect(new Date(nextCronSlot(parseCron("0 3 * * *"), at)).toISOString()).toBe(
      "2026-01-01T03:00:00.000Z",
    );
    expect(new Date(nextCronSlot(parseCron("*/15 * * * *"), at)).toISOString()).toBe(
      "2026-01-01T03:00:00.000Z",
    );
    expect(new Date(nextCronSlot(parseCron("30 9 * * 1"), at)).toISOString()).toBe(
      "2026-01-05T09:30:00.000Z",
    );
    expect(new Date(nextCronSlot(parseCron("0 0 1 3 *"), at)).toISOString()).toBe(
      "2026-03-01T00:00:00.000Z",
    );
    expect(() => parseCron("0 3 * *")).toThrow(/4 fields instead of 5/);
    expect(() => parseCron("61 * * * *")).toThrow(/minute field "61" is outside 0-59/);
    expect(() => parseCron("a * * * *")).toThrow(/not a number/);
  });
});
