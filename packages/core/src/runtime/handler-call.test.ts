import { describe, expect, it } from "vitest";
import { normalise } from "./handler-call.js";

describe("normalise (a handler's return value → AgentResult)", () => {
  it("keeps a plain result as it is, nested data included", () => {
    const data = { graph: { path: ["a#1", "b#1"], visits: { a: 1 }, node: null }, n: -2.5 };
    expect(normalise("h", { output: "ok", data })).toEqual({
      status: "success",
      output: "ok",
      data,
      error: null,
      handler: "h",
    });
    expect(normalise("h", { status: "needs_data", error: null, data: {} })).toMatchObject({
      status: "needs_data",
      error: null,
    });
  });

  it.each([
    ["an unknown key", { ouptut: "typo" }, "result"],
    ["an unknown status", { status: "done" }, "result.status"],
    ["a number as output", { output: 42 }, "result.output"],
    ["a Date in data", { data: { when: new Date(0) } }, "result.data.when"],
    ["Infinity in data", { data: { n: Infinity } }, "result.data.n"],
    ["undefined in data", { data: { n: undefined } }, "result.data.n"],
    ["an array as data", { data: [1] }, "result.data"],
  ])("refuses %s, naming the field", (_, value, field) => {
    const result = normalise("h", value);
    expect(result.status).toBe("error");
    expect(result.error).toContain(`Handler "h" returned an invalid result (${field}`);
  });
});
