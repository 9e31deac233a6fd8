import { describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { HybridRouter } from "./hybrid-router.js";
import { LlmRouter } from "./llm-router.js";
import { RuleRouter } from "./rule-router.js";
import type { HandlerDescription } from "./types.js";

const names = ["a", "b", "c", "d", "e"];
const handlers = names.map((name) => ({ name, description: `handler ${name}` }));
/** First stage: a rule per handler, scores 1.0, 0.9, 0.8, 0.7, 0.6 for "a".."e". */
const first = () =>
  new RuleRouter({
    rules: names.map((name, i) => ({ handler: name, pattern: /./, score: 1 - i / 10 })),
  });
const ctx = (allowedAgents: string[] | null = null) =>
  ExecContext.create({ permissions: { allowedAgents } });

function reranker(answer: (offered: readonly HandlerDescription[]) => unknown) {
  const shown: string[][] = [];
  const router = new LlmRouter({
    handlers,
    classify: (_m, offered) => {
      shown.push(offered.map((h) => h.name));
      return answer(offered);
    },
  });
  return { router, shown };
}

describe("HybridRouter", () => {
  it("reranks only the first stage's top-k", async () => {
    const { router: second, shown } = reranker((offered) =>
      offered.map((h, i) => ({ name: h.name, score: i / 10, reason: `r${i}` })),
    );
    const r = await new HybridRouter({ first: first(), second, topK: 3 }).classify("x", ctx());
    expect(shown).toEqual([["a", "b", "c"]]);
    expect(r.candidates.map((c) => [c.name, c.score])).toEqual([
      ["c", 0.2],
      ["b", 0.1],
      ["a", 0],
    ]);
    expect(r.best?.reason).toBe("rerank 0.20 (r2); first stage 0.80 (pattern /./)");
  });

  it("blends the stages with secondWeight and counts an unchosen name as 0", async () => {
    const { router: second } = reranker(() => [{ name: "b", score: 1 }]);
    const r = await new HybridRouter({
      first: first(),
      second,
      topK: 2,
      secondWeight: 0.5,
    }).classify("x", ctx());
    expect(r.candidates.map((c) => [c.name, c.score])).toEqual([
      ["b", 0.95],
      ["a", 0.5],
    ]);
    expect(r.candidates[1]?.reason).toContain("not chosen by the second stage");
  });

  it("skips the rerank when the first stage is confident enough", async () => {
    const { router: second, shown } = reranker(() => []);
    const c = ctx();
    const r = await new HybridRouter({ first: first(), second, skipRerankAbove: 0.95 }).classify(
      "x",
      c,
    );
    expect(shown).toHaveLength(0);
    expect(r.candidates.map((x) => x.name)).toEqual(["a", "b", "c"]);
    expect(c.spans.map((s) => s.name)).toEqual(["router.shortlist"]);
  });

  it("falls back to the shortlist when the reranker fails, and says so", async () => {
    const { router: second } = reranker(() => {
      throw new Error("model down");
    });
    const c = ctx();
    const r = await new HybridRouter({ first: first(), second, topK: 2 }).classify("x", c);
    expect(r.candidates.map((x) => x.name)).toEqual(["a", "b"]);
    const event = c.events.find((e) => e.name === "router.rerank_failed");
    expect(event?.attributes["error"]).toContain("model down");
  });

  it("applies the context's permissions before shortlisting", async () => {
    const { router: second, shown } = reranker((offered) =>
      offered.map((h) => ({ name: h.name, score: 0.5 })),
    );
    const r = await new HybridRouter({ first: first(), second, topK: 2 }).classify(
      "x",
      ctx(["b", "d", "e"]),
    );
    expect(shown).toEqual([["b", "d"]]);
    expect(r.candidates.map((x) => x.name)).toEqual(["b", "d"]);
  });

  it("times each stage in a child span of its own, under the caller's span", async () => {
    const { router: second } = reranker(() => [{ name: "a", score: 1 }]);
    const root = ctx();
    const stageSpan = root.startSpan("router.classify");
    await new HybridRouter({ first: first(), second }).classify(
      "x",
      root.fork({ span: stageSpan }),
    );
    expect(root.spans.map((s) => [s.name, s.parentId, s.attributes["candidates"]])).toEqual([
      ["router.classify", null, undefined],
      ["router.shortlist", stageSpan.id, 5],
      ["router.rerank", stageSpan.id, 1],
    ]);
  });

  it("ends the rerank span in error when the reranker fails", async () => {
    const { router: second } = reranker(() => {
      throw new Error("model down");
    });
    const c = ctx();
    await new HybridRouter({ first: first(), second }).classify("x", c);
    expect(c.spans.map((s) => [s.name, s.status])).toEqual([
      ["router.shortlist", "ok"],
      ["router.rerank", "error"],
    ]);
  });

  it("returns nothing without asking the reranker when the first stage finds nothing", async () => {
    const { router: second, shown } = reranker(() => []);
    const r = await new HybridRouter({
      first: new RuleRouter({ rules: [{ handler: "a", keywords: ["zzz"] }] }),
      second,
    }).classify("x", ctx());
    expect(r).toEqual({ candidates: [], best: null });
    expect(shown).toHaveLength(0);
  });

  it("rejects invalid options naming the field", () => {
    expect(() => new HybridRouter({ first: first(), second: {} as never })).toThrow(
      /options\.second: must be a Router/,
    );
    expect(() => new HybridRouter({ first: first(), second: first(), topK: 0 })).toThrow(
      /options\.topK/,
    );
  });
});
