import { z } from "zod";
import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import { HandlerNameSchema } from "../runtime/options.js";
import { checkClassifyArgs, onlySet, parseRouterOptions, rank } from "./rank.js";
import type { ClassifyOptions, RouteCandidate, RouteResult, Router } from "./types.js";

const score = z.number().min(0).max(1);

const RuleSchema = z
  .object({
    handler: HandlerNameSchema,
    pattern: z.union([z.instanceof(RegExp), z.string().min(1)]).optional(),
    keywords: z.array(z.string().trim().min(1)).min(1).optional(),
    score: score.default(1),
  })
  .strict()
  .refine((r) => (r.pattern === undefined) !== (r.keywords === undefined), {
    message: "give exactly one of pattern or keywords",
    path: ["pattern"],
  });

const RuleRouterOptionsSchema = z
  .object({
    rules: z.array(RuleSchema),
    defaultHandler: HandlerNameSchema.optional(),
    defaultScore: score.default(0.5),
  })
  .strict();

/**
 * One routing rule: a regular expression (a string is compiled case-insensitively) or a list of
 * keywords matched as whole words, case-insensitively. `score` (default 1) is the score of a
 * pattern match; a keyword rule scores `score × (0.5 + 0.5 × matched / keywords.length)`.
 *
 * @example
 * const rule: RouteRule = { handler: "flight_agent", keywords: ["flight", "fly", "plane"] };
 */
export type RouteRule = z.input<typeof RuleSchema>;

/**
 * Options of {@link RuleRouter}. `defaultHandler` is always the last candidate: with score
 * `defaultScore` (default 0.5) when no rule matched, with score 0 otherwise (a last resort
 * for callers that fall through candidates).
 *
 * @example
 * const options: RuleRouterOptions = { rules: [{ handler: "greeter", pattern: "^(hi|hello)\\b" }], defaultHandler: "fallback" };
 */
export type RuleRouterOptions = z.input<typeof RuleRouterOptionsSchema>;

interface CompiledRule {
  readonly handler: string;
  readonly score: number;
  readonly pattern: RegExp | null;
  /** The candidate reason of a pattern match, built once rather than on every match. */
  readonly patternReason: string;
  readonly keywords: readonly { readonly word: string; readonly re: RegExp }[];
}

const FIX =
  'Pass { rules: [{ handler: "name", pattern: /regex/ | "regex" } | { handler, keywords: ["word"] }], defaultHandler?, defaultScore? in [0, 1] }.';

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function compilePattern(pattern: RegExp | string, index: number): RegExp {
  if (pattern instanceof RegExp) {
    // `g` and `y` make `test` stateful (lastIndex), which would make routing depend on history.
    return new RegExp(pattern.source, pattern.flags.replace(/[gy]/g, ""));
  }
  try {
    return new RegExp(pattern, "iu");
  } catch (err) {
    const path = `options.rules.${index}.pattern`;
    throw new NervaError(
      ErrorCode.INVALID_OPTIONS,
      `Invalid ${path}: ${(err as Error).message}. Give a valid regular expression (or a RegExp).`,
      { cause: err, issues: [{ path, message: "not a valid regular expression" }] },
    );
  }
}

/**
 * Routes by regular expressions and keywords: no I/O, a few microseconds per message. The
 * cheap first stage of a {@link HybridRouter}, or a router on its own.
 *
 * @example
 * const router = new RuleRouter({
 *   rules: [
 *     { handler: "flight_agent", keywords: ["flight", "fly", "plane"] },
 *     { handler: "weather_agent", pattern: /\b(weather|forecast)\b/i },
 *   ],
 *   defaultHandler: "chat_agent",
 * });
 * const { best } = await router.classify("Book me a flight to Oslo", ctx); // flight_agent
 */
export class RuleRouter implements Router {
  /** Classifies by rules alone: no span, event or I/O (see {@link Router.spanless}). */
  readonly spanless: boolean = true;
  readonly #rules: readonly CompiledRule[];
  readonly #defaultHandler: string | null;
  /** The answer when no rule matched: built once, it is the same every time. */
  readonly #defaultOnly: RouteResult | null;

  constructor(options: RuleRouterOptions) {
    const o = parseRouterOptions(RuleRouterOptionsSchema, options, FIX);
    this.#rules = o.rules.map((rule, i) => ({
      handler: rule.handler,
      score: rule.score,
      pattern: rule.pattern === undefined ? null : compilePattern(rule.pattern, i),
      patternReason:
        rule.pattern === undefined ? "" : `pattern ${String(compilePattern(rule.pattern, i))}`,
      keywords: (rule.keywords ?? []).map((word) => ({
        word,
        re: new RegExp(`(?<![\\p{L}\\p{N}_])${escapeRegExp(word)}(?![\\p{L}\\p{N}_])`, "iu"),
      })),
    }));
    this.#defaultHandler = o.defaultHandler ?? null;
    if (this.#defaultHandler === null) {
      this.#defaultOnly = null;
    } else {
      const only: RouteCandidate = Object.freeze({
        name: this.#defaultHandler,
        score: o.defaultScore,
        reason: "default handler: no rule matched",
      });
      this.#defaultOnly = Object.freeze({ candidates: Object.freeze([only]), best: only });
    }
  }

  /** Every handler this router can return, in rule order, the default last. */
  handlerNames(): readonly string[] {
    const names = new Set(this.#rules.map((r) => r.handler));
    if (this.#defaultHandler !== null) names.add(this.#defaultHandler);
    return [...names];
  }

  async classify(
    message: string,
    ctx: ExecContext,
    options?: ClassifyOptions,
  ): Promise<RouteResult> {
    checkClassifyArgs(message, ctx);
    const raw: RouteCandidate[] = [];
    for (const rule of this.#rules) {
      if (rule.pattern !== null) {
        if (rule.pattern.test(message)) {
          raw.push({ name: rule.handler, score: rule.score, reason: rule.patternReason });
        }
        continue;
      }
      const matched: string[] = [];
      for (const k of rule.keywords) if (k.re.test(message)) matched.push(k.word);
      if (matched.length > 0) {
        raw.push({
          name: rule.handler,
          score: rule.score * (0.5 + (0.5 * matched.length) / rule.keywords.length),
          reason: `keywords ${matched.map((w) => `"${w}"`).join(", ")} (${matched.length}/${rule.keywords.length})`,
        });
      }
    }
    const only = onlySet(options);
    let result = rank(raw, ctx, only);
    const fallback = this.#defaultHandler;
    // A default handler the context may not use is left out, like any other candidate.
    if (
      fallback !== null &&
      (only === null || only.has(fallback)) &&
      ctx.permissions.canUseAgent(fallback)
    ) {
      if (result.candidates.length === 0) {
        result = this.#defaultOnly as RouteResult;
      } else if (!result.candidates.some((c) => c.name === fallback)) {
        const last: RouteCandidate = Object.freeze({
          name: fallback,
          score: 0,
          reason: "default handler (last resort)",
        });
        const candidates = Object.freeze([...result.candidates, last]);
        result = Object.freeze({ candidates, best: candidates[0] ?? null });
      }
    }
    return result;
  }
}
