import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { EmbeddingRouter } from "./embedding-router.js";
import { HybridRouter } from "./hybrid-router.js";
import { LlmRouter } from "./llm-router.js";
import { RuleRouter } from "./rule-router.js";
import type { RouteResult, Router } from "./types.js";

/**
 * The Router contract, checked with random messages, permissions, `only` lists and (for the
 * LLM router) random, often malformed, model answers.
 */
const NAMES = ["alpha", "beta", "gamma", "delta", "epsilon"];
const WORDS = ["book", "flight", "rain", "hotel", "alpha", "beta", "x", "Flight", "ß", "🙂"];
const handlers = NAMES.map((name, i) => ({
  name,
  description: `${WORDS[i]} ${WORDS[i + 1]} ${name}`,
}));

function embed(texts: string[]): Promise<number[][]> {
  // Character-trigram hashing into 16 buckets, with a negative component so cosines can be < 0.
  return Promise.resolve(
    texts.map((t) => {
      const v = new Array<number>(16).fill(0);
      for (let i = 0; i + 3 <= t.length; i++) {
        let h = 0;
        for (let k = i; k < i + 3; k++) h = (h * 31 + t.charCodeAt(k)) % 1009;
        v[h % 16]! += h % 2 === 0 ? 1 : -1;
      }
      return v;
    }),
  );
}

let modelAnswer: unknown = [];
const llm = () => new LlmRouter({ handlers, classify: () => modelAnswer });

const routers: [string, () => Router][] = [
  [
    "RuleRouter",
    () =>
      new RuleRouter({
        rules: [
          { handler: "alpha", keywords: ["book", "flight"] },
          { handler: "beta", pattern: /rain|hotel/i, score: 0.7 },
          { handler: "gamma", keywords: ["x"], score: 0.2 },
          { handler: "alpha", pattern: /ß/ },
        ],
        defaultHandler: "epsilon",
      }),
  ],
  ["EmbeddingRouter", () => new EmbeddingRouter({ embed, handlers })],
  ["LlmRouter", llm],
  [
    "HybridRouter",
    () =>
      new HybridRouter({ first: new EmbeddingRouter({ embed, handlers }), second: llm(), topK: 3 }),
  ],
];

const score = fc.oneof(
  fc.double({ min: -2, max: 3 }),
  fc.constantFrom(Number.NaN, Infinity, -Infinity, 0, 1),
);
const answer = fc.oneof(
  fc.array(
    fc.record({
      name: fc.oneof(fc.constantFrom(...NAMES), fc.string()),
      score,
      reason: fc.option(fc.string(), { nil: undefined }),
    }),
    { maxLength: 8 },
  ),
  fc.array(fc.anything(), { maxLength: 4 }),
);
const message = fc.array(fc.constantFrom(...WORDS), { maxLength: 6 }).map((w) => w.join(" "));
const allowed = fc.option(fc.subarray(NAMES), { nil: null });
const only = fc.option(fc.subarray(NAMES), { nil: undefined });

function checkInvariants(r: RouteResult, ctx: ExecContext, onlyNames: string[] | undefined): void {
  const names = r.candidates.map((c) => c.name);
  expect(new Set(names).size).toBe(names.length);
  for (const c of r.candidates) {
    expect(Number.isFinite(c.score)).toBe(true);
    expect(c.score).toBeGreaterThanOrEqual(0);
    expect(c.score).toBeLessThanOrEqual(1);
    expect(ctx.permissions.canUseAgent(c.name)).toBe(true);
    expect(NAMES).toContain(c.name);
    if (onlyNames !== undefined) expect(onlyNames).toContain(c.name);
    expect(typeof c.reason).toBe("string");
  }
  for (let i = 1; i < r.candidates.length; i++) {
    expect(r.candidates[i - 1]!.score).toBeGreaterThanOrEqual(r.candidates[i]!.score);
  }
  expect(r.best).toBe(r.candidates[0] ?? null);
}

describe.each(routers)("Router contract: %s", (_name, make) => {
  it("returns unique, permitted, sorted candidates with scores in [0, 1]", async () => {
    const router = make();
    await fc.assert(
      fc.asyncProperty(message, allowed, only, answer, async (msg, allowedAgents, onlyNames, a) => {
        modelAnswer = a;
        const ctx = ExecContext.create({ permissions: { allowedAgents } });
        const r = await router.classify(
          msg,
          ctx,
          onlyNames === undefined ? undefined : { only: onlyNames },
        );
        checkInvariants(r, ctx, onlyNames);
        // The stage span is the orchestrator's: a router never opens one of its own.
        expect(ctx.spans.some((s) => s.name === "router.classify")).toBe(false);
      }),
      { numRuns: 150 },
    );
  });

  it("never returns a denied name, whatever the message", async () => {
    const router = make();
    modelAnswer = NAMES.map((name) => ({ name, score: 1 }));
    await fc.assert(
      fc.asyncProperty(message, fc.subarray(NAMES), async (msg, allowedAgents) => {
        const ctx = ExecContext.create({ permissions: { allowedAgents } });
        const r = await router.classify(msg, ctx);
        for (const c of r.candidates) expect(allowedAgents).toContain(c.name);
      }),
      { numRuns: 100 },
    );
  });
});
