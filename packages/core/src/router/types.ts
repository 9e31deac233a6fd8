import type { ExecContext } from "../context/exec-context.js";

/**
 * One handler a router proposes for a message. `score` is in [0, 1]; higher means a better fit.
 *
 * @example
 * const candidate: RouteCandidate = { name: "flight_agent", score: 0.92, reason: 'keyword "flight"' };
 */
export interface RouteCandidate {
  /** Handler name, as registered on the runtime. */
  readonly name: string;
  /** Confidence in [0, 1]. */
  readonly score: number;
  /** Short human-readable explanation (which rule, which similarity, what the LLM said). */
  readonly reason: string;
}

/**
 * What `classify` returns: every candidate, best first, and the best one (`null` when no handler
 * fits or the context may use none of those that do).
 *
 * @example
 * const { best, candidates } = await router.classify("book a flight", ctx);
 * if (best === null) return "Sorry, I cannot help with that.";
 */
export interface RouteResult {
  /** Sorted by score, descending; ties keep the router's own order. Names are unique. */
  readonly candidates: readonly RouteCandidate[];
  /** `candidates[0]`, or `null` when there is none. */
  readonly best: RouteCandidate | null;
}

/**
 * Per-call options of {@link Router.classify}.
 *
 * @example
 * const shortlist = await reranker.classify(message, ctx, { only: ["flight_agent", "refund_agent"] });
 */
export interface ClassifyOptions {
  /**
   * Consider only these handler names (e.g. the top-k of a cheaper stage, see `HybridRouter`).
   * Names the router does not know are ignored.
   */
  readonly only?: readonly string[];
}

/**
 * Picks the handler(s) for a message. Every implementation:
 * - drops candidates that `ctx.permissions.canUseAgent(name)` rejects (and never tells a model
 *   about them);
 * - returns scores in [0, 1], sorted descending, with unique names.
 *
 * The orchestrator opens the `router.classify` span (attributes `candidates`, `best`, `score`)
 * and calls `classify` with a context whose spans nest under it: a router records no span of its
 * own for the stage, and may add child spans for steps worth timing (e.g. `HybridRouter`'s).
 *
 * A router rejects (with a `NervaError`) only when a plug-in it depends on fails (an embedder, an
 * LLM call); "nothing fits" is an empty result, not an error.
 *
 * @example
 * class FirstWordRouter implements Router {
 *   async classify(message: string, ctx: ExecContext): Promise<RouteResult> {
 *     const name = message.split(" ")[0] ?? "";
 *     const best = ctx.permissions.canUseAgent(name) ? { name, score: 1, reason: "first word" } : null;
 *     return { candidates: best ? [best] : [], best };
 *   }
 * }
 */
export interface Router {
  /**
   * Set to `true` when `classify` opens no span, records no event and starts no work of its own: the
   * orchestrator then calls it with the request's context instead of a fork under its
   * `router.classify` span (the trace is the same either way; the fork costs a few hundred ns per
   * request). Leave it unset if unsure. Built-in implementations that qualify set it, and any
   * implementation may.
   */
  readonly spanless?: boolean;
  classify(message: string, ctx: ExecContext, options?: ClassifyOptions): Promise<RouteResult>;
}

/**
 * A handler a router can pick, described for similarity- or LLM-based routing.
 *
 * @example
 * const handlers: HandlerDescription[] = [{ name: "flight_agent", description: "Books flights" }];
 */
export interface HandlerDescription {
  readonly name: string;
  readonly description: string;
}
