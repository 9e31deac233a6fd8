import { describe, expect, it } from "vitest";
import { ExecContext } from "./exec-context.js";
import { NervaError } from "../errors.js";

describe("request-local slots", () => {
  it("share one value across the root, children and forks of a tree", () => {
    const k = ExecContext.key<string[]>("test.list");
    const root = ExecContext.create();
    const child = root.child("a");
    const fork = child.fork({ agentName: "b" });
    fork.local(k, () => []).push("from fork");
    child.local(k, () => ["never used"]).push("from child");
    expect(root.local(k)).toEqual(["from fork", "from child"]);
    root.dispose();
  });

  it("are separate per tree and per key, even with the same name", () => {
    const k1 = ExecContext.key<number>("same");
    const k2 = ExecContext.key<number>("same");
    const a = ExecContext.create();
    const b = ExecContext.create();
    a.setLocal(k1, 1);
    expect(a.local(k1)).toBe(1);
    expect(a.local(k2)).toBeUndefined();
    expect(b.local(k1)).toBeUndefined();
  });

  it("calls init once and keeps falsy values", () => {
    const k = ExecContext.key<number>("n");
    const ctx = ExecContext.create();
    let calls = 0;
    expect(ctx.local(k, () => (calls++, 0))).toBe(0);
    expect(ctx.local(k, () => (calls++, 5))).toBe(0);
    expect(calls).toBe(1);
    ctx.setLocal(k, 7);
    expect(ctx.fork().local(k)).toBe(7);
  });

  it("refuses an empty key name with a typed error", () => {
    expect(() => ExecContext.key("")).toThrow(NervaError);
  });
});
