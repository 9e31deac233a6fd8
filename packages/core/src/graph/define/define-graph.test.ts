import { describe, expect, it } from "vitest";
import { z } from "zod";
import { NervaError } from "../../errors.js";
import { END, Reducers, agentNode, defineGraph, fnNode, inputNode } from "../index.js";

const state = z.object({ n: z.number().default(0), log: z.array(z.string()).default([]) });
const noop = fnNode(() => ({}));

function refusal(def: () => unknown): NervaError {
  try {
    def();
  } catch (err) {
    expect(err).toBeInstanceOf(NervaError);
    expect((err as NervaError).code).toBe("INVALID_OPTIONS");
    return err as NervaError;
  }
  throw new Error("defineGraph accepted an invalid graph");
}

describe("defineGraph validation", () => {
  it("accepts the refund desk of the issue", () => {
    const g = defineGraph({
      name: "refund_desk",
      state: z.object({
        orderId: z.string().optional(),
        total: z.number().optional(),
        decision: z.string().optional(),
      }),
      nodes: {
        intake: agentNode("intake_agent"),
        lookup: fnNode(() => ({ total: 1 })),
        review: inputNode({
          prompt: (s) => `Refund ${String(s.total)}?`,
          kind: "approval",
          writes: "decision",
        }),
        refund: agentNode("refund_agent"),
      },
      edges: [
        ["intake", "lookup"],
        ["lookup", "review"],
        ["review", (s) => (s.decision === "approved" ? "refund" : END), ["refund", END]],
        ["refund", END],
      ],
      entry: "intake",
      maxSteps: 100,
    });
    expect(g.nodeIds).toEqual(["intake", "lookup", "review", "refund"]);
    expect(g.maxSteps).toBe(100);
  });

  it("names an unknown node in an edge", () => {
    const e = refusal(() =>
      defineGraph({ name: "g", state, nodes: { a: noop }, edges: [["a", "b"]], entry: "a" }),
    );
    expect(e.message).toMatch(/unknown node "b" in an edge/);
    expect(e.issues[0]?.path).toBe("edges[0][1]");
  });

  it("names an unknown source node and an unknown entry", () => {
    expect(
      refusal(() =>
        defineGraph({ name: "g", state, nodes: { a: noop }, edges: [["x", END]], entry: "a" }),
      ).message,
    ).toMatch(/unknown node "x"/);
    expect(
      refusal(() =>
        defineGraph({ name: "g", state, nodes: { a: noop }, edges: [["a", END]], entry: "b" }),
      ).message,
    ).toMatch(/entry: unknown node "b"/);
  });

  it("names an unreachable node", () => {
    const e = refusal(() =>
      defineGraph({
        name: "g",
        state,
        nodes: { a: noop, orphan: noop },
        edges: [
          ["a", END],
          ["orphan", END],
        ],
        entry: "a",
      }),
    );
    expect(e.message).toMatch(/unreachable node "orphan"/);
  });

  it("counts entries as reachable", () => {
    const g = defineGraph({
      name: "g",
      state,
      nodes: { a: noop, nightly: noop },
      edges: [
        ["a", END],
        ["nightly", END],
      ],
      entry: "a",
      entries: ["nightly"],
    });
    expect(g.nodeIds).toContain("nightly");
  });

  it("names the nodes with no path to END", () => {
    const e = refusal(() =>
      defineGraph({
        name: "g",
        state,
        nodes: { a: noop, b: noop, c: noop },
        edges: [
          ["a", "b"],
          ["b", "c"],
          ["c", "b"],
        ],
        entry: "a",
      }),
    );
    expect(e.message).toMatch(/no path to END from "a", "b", "c"/);
  });

  it("refuses a node without an outgoing edge (it cannot finish)", () => {
    expect(
      refusal(() => defineGraph({ name: "g", state, nodes: { a: noop }, edges: [], entry: "a" }))
        .message,
    ).toMatch(/no path to END from "a"/);
  });

  it("refuses two unconditional edges from one node", () => {
    const e = refusal(() =>
      defineGraph({
        name: "g",
        state,
        nodes: { a: noop, b: noop, c: noop },
        edges: [
          ["a", "b"],
          ["a", "c"],
          ["b", END],
          ["c", END],
        ],
        entry: "a",
      }),
    );
    expect(e.message).toMatch(/two unconditional edges from "a" \(to "b" and to "c"\)/);
    expect(e.message).toMatch(/fan-out/);
  });

  it("refuses a state schema that is not an object", () => {
    for (const bad of [z.string(), z.array(z.number()), { n: 1 }, null]) {
      const e = refusal(() =>
        defineGraph({
          name: "g",
          state: bad as never,
          nodes: { a: noop } as never,
          edges: [["a", END]],
          entry: "a",
        }),
      );
      expect(e.message).toMatch(/state schema must be a zod object/);
    }
  });

  it("checks reads, writes and reducers against the state keys", () => {
    expect(
      refusal(() =>
        defineGraph({
          name: "g",
          state,
          nodes: { a: fnNode(() => ({}), { writes: ["nope" as never] }) },
          edges: [["a", END]],
          entry: "a",
        }),
      ).message,
    ).toMatch(/nodes.a.writes: "nope" is not a key/);
    expect(
      refusal(() =>
        defineGraph({
          name: "g",
          state,
          nodes: { a: noop },
          edges: [["a", END]],
          entry: "a",
          reducers: { nope: Reducers.append } as never,
        }),
      ).message,
    ).toMatch(/reducers.nope/);
  });

  it("checks fan-outs: branches need one static edge to a common join", () => {
    expect(
      refusal(() =>
        defineGraph({
          name: "g",
          state,
          nodes: { a: noop, b: noop, c: noop, d: noop },
          edges: [
            ["a", ["b", "c"]],
            ["b", "d"],
            ["c", END],
            ["d", END],
          ],
          entry: "a",
        }),
      ).message,
    ).toMatch(/must all join at one node/);
    expect(
      refusal(() =>
        defineGraph({
          name: "g",
          state,
          nodes: {
            a: noop,
            b: fnNode(() => ({}), { writes: ["n"] }),
            c: fnNode(() => ({}), { writes: ["n"] }),
            d: noop,
          },
          edges: [
            ["a", ["b", "c"]],
            ["b", "d"],
            ["c", "d"],
            ["d", END],
          ],
          entry: "a",
        }),
      ).message,
    ).toMatch(/both write "n" in parallel/);
    const ok = defineGraph({
      name: "g",
      state,
      nodes: { a: noop, b: noop, c: noop, d: noop },
      edges: [
        ["a", ["b", "c"]],
        ["b", "d"],
        ["c", "d"],
        ["d", END],
      ],
      entry: "a",
    });
    expect(ok.edges.get("a")).toMatchObject({ type: "fanout", join: "d" });
  });

  it("refuses bad names, node ids, maxSteps, maxVisits, and conditional targets", () => {
    expect(
      refusal(() =>
        defineGraph({
          name: "bad name",
          state,
          nodes: { a: noop },
          edges: [["a", END]],
          entry: "a",
        }),
      ).message,
    ).toMatch(/name/);
    expect(
      refusal(() =>
        defineGraph({ name: "g", state, nodes: { "a b": noop }, edges: [], entry: "a b" }),
      ).message,
    ).toMatch(/node id "a b"/);
    expect(
      refusal(() =>
        defineGraph({
          name: "g",
          state,
          nodes: { a: noop },
          edges: [["a", END]],
          entry: "a",
          maxSteps: 0,
        }),
      ).message,
    ).toMatch(/maxSteps/);
    expect(
      refusal(() =>
        defineGraph({
          name: "g",
          state,
          nodes: { a: fnNode(() => ({}), { maxVisits: 0 }) },
          edges: [["a", END]],
          entry: "a",
        }),
      ).message,
    ).toMatch(/maxVisits/);
    expect(
      refusal(() =>
        defineGraph({
          name: "g",
          state,
          nodes: { a: noop },
          edges: [["a", () => END, ["zz"]]],
          entry: "a",
        }),
      ).message,
    ).toMatch(/unknown node "zz"/);
    expect(
      refusal(() =>
        defineGraph({
          name: "g",
          state,
          nodes: { a: {} as never },
          edges: [["a", END]],
          entry: "a",
        }),
      ).message,
    ).toMatch(/must be a node/);
  });

  it("checks node factories' options", () => {
    expect(() => fnNode("x" as never)).toThrow(/fnNode\(fn\): must be a function/);
    expect(() => agentNode("")).toThrow(/agentNode\(handler\)/);
    expect(() => inputNode({ prompt: "?" } as never)).toThrow(/writes/);
  });
});
