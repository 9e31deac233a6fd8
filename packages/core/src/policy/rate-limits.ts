import { ExecContext } from "../context/exec-context.js";
import { ErrorCode } from "../errors.js";
import { denyDecision } from "./decision.js";
import type { PolicyDocument } from "./document.js";
import { SlidingWindowLimiter } from "./rate-limiter.js";
import { globs, type Target } from "./rules.js";
import type { Checkpoint, PolicyDecision } from "./types.js";

type Rule = PolicyDocument["rateLimits"][number];

interface Limit {
  readonly rule: Rule;
  readonly re: RegExp;
  readonly limiter: SlidingWindowLimiter;
}

/** One limit that applies to an action, and the key it counts under. */
export interface LimitHit {
  readonly limit: Limit;
  readonly key: string;
}

const NO_HITS: readonly LimitHit[] = Object.freeze([]);

/**
 * The `rateLimits` of a policy document: `per: user` counted before routing, `per: handler` and
 * `per: user_handler` on agents and delegations. Each request is counted once per limit: what a
 * request was counted against is request-local state (a slot of the context, one per engine),
 * so evaluating the same request again (a middleware and the orchestrator, the kit and a
 * runtime's delegation hook) does not count it twice.
 */
export class RateLimits {
  readonly #perUser: readonly Limit[];
  readonly #perHandler: readonly Limit[];
  /** `requestId \n limit \n key` of every admission of this tree, for this engine. */
  readonly #counted = ExecContext.key<Set<string>>("nerva.policy.counted");
  readonly #clock: () => number;

  constructor(document: PolicyDocument, clock: () => number) {
    const limits = document.rateLimits.map((rule) => ({
      rule,
      re: globs(rule.names),
      limiter: new SlidingWindowLimiter(rule.limit, rule.windowSeconds * 1000),
    }));
    this.#perUser = limits.filter((l) => l.rule.per === "user");
    this.#perHandler = limits.filter((l) => l.rule.per !== "user");
    this.#clock = clock;
  }

  /** The `per: user` limits of a request (checked before routing). */
  userHits(ctx: ExecContext): readonly LimitHit[] {
    if (this.#perUser.length === 0) return NO_HITS;
    const key = `user:${ctx.userId ?? "anonymous"}`;
    return this.#perUser.map((limit) => ({ limit, key }));
  }

  /** The `per: handler` and `per: user_handler` limits of an agent or delegation. */
  handlerHits(target: Target, name: string, ctx: ExecContext): readonly LimitHit[] {
    if (target !== "agent" || this.#perHandler.length === 0) return NO_HITS;
    const hits: LimitHit[] = [];
    for (const limit of this.#perHandler) {
      if (!limit.re.test(name)) continue;
      const key =
        limit.rule.per === "handler"
          ? `handler:${name}`
          : `user_handler:${ctx.userId ?? "anonymous"}:${name}`;
      hits.push({ limit, key });
    }
    return hits;
  }

  /**
   * The RATE_LIMITED refusal of the first exhausted limit in `hits`, or `null`. With `commit`,
   * an admission is recorded against every limit this request was not counted against yet; the
   * check and the record happen in one synchronous step.
   */
  check(
    hits: readonly LimitHit[],
    ctx: ExecContext,
    cp: Checkpoint,
    commit: boolean,
  ): PolicyDecision | null {
    if (hits.length === 0) return null;
    const now = this.#clock();
    const counted = ctx.local(this.#counted);
    const id = (h: LimitHit): string => `${ctx.requestId}\n${h.limit.rule.name}\n${h.key}`;
    const fresh = counted === undefined ? hits : hits.filter((h) => !counted.has(id(h)));
    for (const h of fresh) {
      const probe = h.limit.limiter.peek(h.key, now);
      if (!probe.allowed) {
        return denyDecision(
          cp,
          ErrorCode.RATE_LIMITED,
          `Rate limit "${h.limit.rule.name}" reached for ${h.key}; retry in ${probe.retryAfterSeconds} s.`,
          h.limit.rule.name,
          probe.retryAfterSeconds,
        );
      }
    }
    if (commit && fresh.length > 0) {
      const record = counted ?? ctx.local(this.#counted, () => new Set());
      for (const h of fresh) {
        h.limit.limiter.hit(h.key, now);
        record.add(id(h));
      }
    }
    return null;
  }
}
