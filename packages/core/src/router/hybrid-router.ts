import { z } from "zod";
import type { ExecContext } from "../context/exec-context.js";
import { messageOf } from "../runtime/results.js";
import { checkClassifyArgs, onlySet, parseRouterOptions, rank } from "./rank.js";
import type { ClassifyOptions, RouteCandidate, RouteResult, Router } from "./types.js";

const isRouter = (v: unknown): v is Router =>
  typeof v === "object" && v !== null && typeof (v as Router).classify === "function";

const HybridRouterOptionsSchema = z
  .object({
    first: z.custom<Router>(isRouter, "must be a Router (an object with classify(message, ctx))"),
    second: z.custom<Router>(isRouter, "must be a Router (an object with classify(message, ctx))"),
    topK: z.number().int().min(1).max(100).default(3),
    skipRerankAbove: z.number().min(0).max(1).nullable().default(null),
    secondWeight: z.number().min(0).max(1).default(1),
  })
  .strict();

/**
 * Options of {@link HybridRouter}:
 * - `first`: the cheap stage (e.g. a {@link RuleRouter} or {@link EmbeddingRouter});
 * - `second`: the reranker, asked only about the first stage's `topK` (default 3) candidates;
 * - `skipRerankAbove`: when the first stage's best score is at least this, its answer stands
 *   (default `null`: always rerank);
 * - `secondWeight`: final score = `secondWeight × second + (1 − secondWeight) × first`
 *   (default 1: the reranker decides; a shortlisted name it does not return counts as 0).
 *
 * @example
 * const options: HybridRouterOptions = { first: ruleRouter, second: llmRouter, topK: 3, skipRerankAbove: 0.95 };
 */
export type HybridRouterOptions = z.input<typeof HybridRouterOptionsSchema>;

const FIX =
  "Pass { first: Router, second: Router, topK?: integer >= 1, skipRerankAbove?: number in [0, 1] | null, secondWeight?: number in [0, 1] }.";

/**
 * Two-stage routing: a cheap router shortlists, an expensive one (an LLM, an embedding model)
 * reranks the shortlist. The result holds only the shortlisted candidates. If the reranker
 * fails, the first stage's shortlist is returned and a `router.rerank_failed` event is recorded,
 * so a flaky model degrades routing instead of breaking it. Each stage runs in a child span of its
 * own (`router.shortlist`, then `router.rerank` unless skipped), under the caller's
 * `router.classify` span.
 *
 * @example
 * const router = new HybridRouter({
 *   first: new EmbeddingRouter({ embed, handlers }),
 *   second: new LlmRouter({ classify, handlers }),
 *   topK: 3,
 * });
 * const { best } = await router.classify("Book me a flight", ctx);
 */
export class HybridRouter implements Router {
  readonly #first: Router;
  readonly #second: Router;
  readonly #topK: number;
  readonly #skipAbove: number | null;
  readonly #weight: number;

  constructor(options: HybridRouterOptions) {
    const o = parseRouterOptions(HybridRouterOptionsSchema, options, FIX);
    this.#first = o.first;
    this.#second = o.second;
    this.#topK = o.topK;
    this.#skipAbove = o.skipRerankAbove;
    this.#weight = o.secondWeight;
  }

  async classify(
    message: string,
    ctx: ExecContext,
    options?: ClassifyOptions,
  ): Promise<RouteResult> {
    checkClassifyArgs(message, ctx);
    const only = onlySet(options);
    const first = await stage(ctx, "router.shortlist", (inner) =>
      this.#first.classify(message, inner, options),
    );
    const shortlist = rank(first.candidates, ctx, only).candidates.slice(0, this.#topK);
    const top = shortlist[0];
    if (top === undefined || (this.#skipAbove !== null && top.score >= this.#skipAbove)) {
      return rank(shortlist, ctx, only);
    }
    let second: RouteResult;
    try {
      second = await stage(ctx, "router.rerank", (inner) =>
        this.#second.classify(message, inner, { only: shortlist.map((c) => c.name) }),
      );
    } catch (err) {
      ctx.event("router.rerank_failed", { error: messageOf(err) });
      return rank(shortlist, ctx, only);
    }
    const reranked = new Map(second.candidates.map((c) => [c.name, c]));
    const w = this.#weight;
    const combined: RouteCandidate[] = shortlist.map((c) => {
      const r = reranked.get(c.name);
      const s2 = r?.score ?? 0;
      return {
        name: c.name,
        score: w * s2 + (1 - w) * c.score,
        reason: `rerank ${s2.toFixed(2)} (${r?.reason ?? "not chosen by the second stage"}); first stage ${c.score.toFixed(2)} (${c.reason})`,
      };
    });
    return rank(combined, ctx, only);
  }
}

/** Runs one stage of the hybrid in its own child span, with the number of candidates found. */
function stage(
  ctx: ExecContext,
  name: string,
  fn: (inner: ExecContext) => Promise<RouteResult>,
): Promise<RouteResult> {
  return ctx.span(name, async (inner, span) => {
    const route = await fn(inner);
    span.setAttribute("candidates", route.candidates.length);
    return route;
  });
}
