import { describe, expect, it } from "vitest";
import { ErrorCode } from "../../errors.js";
import { SharedState } from "./shared-state.js";
import { InMemorySharedStateStore } from "./shared-state-store.js";
import { refusal } from "../../testing/rejection.js";

describe("new SharedState", () => {
  it("refuses bad options with INVALID_OPTIONS naming the field and the fix", () => {
    const cases: [unknown, RegExp][] = [
      [{ isolation: "locked" }, /options\.isolation/],
      [{ initial: [1, 2] }, /options\.initial/],
      [{ isolation: "shared", store: { get() {} } }, /options\.store: must be a SharedStateStore/],
      [
        { store: new InMemorySharedStateStore() },
        /options\.store: is used only by "shared" and "synchronized" isolation/,
      ],
      [{ isolaton: "shared" }, /isolaton/],
      ["synchronized", /options/],
    ];
    for (const [options, field] of cases) {
      const err = refusal(() => new SharedState(options as never));
      expect(err.code).toBe(ErrorCode.INVALID_OPTIONS);
      expect(err.message).toMatch(field);
      // The fix: what options it takes.
      expect(err.message).toMatch(/Pass \{ isolation: "isolated" \| "shared" \| "synchronized"/);
    }
  });

  it("takes good options, defaults included", async () => {
    const store = new InMemorySharedStateStore();
    const shared = new SharedState({ isolation: "synchronized", initial: { n: 1 }, store }, "g");
    expect(shared.isolation).toBe("synchronized");
    expect(shared.store).toBe(store);
    await shared.forExecution().set("n", 2);
    expect(await store.get("g", "n")).toBe(2);
    expect(new SharedState().isolation).toBe("isolated");
  });
});
