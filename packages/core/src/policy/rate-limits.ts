import { ExecContext } from "../context/exec-context.js";
import { ErrorCode } from "../errors.js";
import { denyDecision } from "./decision.js";
import type { PolicyDocument } from "./document.js";
import type { LimitWindow } from "./limit-store.js";
import { globs, type Target } from "./rules.js";
import type { Checkpoint, PolicyDecision } from "./types.js";

type Rule = PolicyDocument["rateLimits"][number];

interface Limit {
  readonly rule: Rule;
  readonly re: RegExp;
  /** The rule's name as the first part of its windows' ids. */
  readonly idPrefix: string;
}

/** One limit that applies to an action, the key it counts under, and its window in the store. */
export interface LimitHit {
  readonly limit: Limit;
  /** For messages: `user:<id>`, `handler:<name>` or `user_handler:<id>:<name>`. */
  readonly key: string;
  readonly window: LimitWindow;
}

const NO_HITS: readonly LimitHit[] = Object.freeze([]);
// URI-encoding leaves no ":" inside a part, so a user id or handler name with a ":" can never
// spell another's window.
const enc = encodeURIComponent;

/**
 * The `rateLimits` of a policy document: `per: user` counted before routing, `per: handler` and
 * `per: user_handler` on agents and delegations. The windows themselves live in the engine's
 * `LimitStore`. Each request is counted once per limit: what a request was counted against is
 * request-local state (a slot of the context, one per engine), so evaluating the same request
 * again (a middleware and the orchestrator, the kit and a runtime's delegation hook) does not
 * count it twice. A durable run executed again is one request too: see `LimitChecks`.
 */
export class RateLimits {
  readonly #perUser: readonly Limit[];
  readonly #perHandler: readonly Limit[];
  /** `requestId \n window id` of every admission of this tree, for this engine. */
  readonly #counted = ExecContext.key<Set<string>>("nerva.policy.counted");

  constructor(document: PolicyDocument) {
    const limits = document.rateLimits.map((rule) => ({
      rule,
      re: globs(rule.names),
      idPrefix: `${enc(rule.name)}:`,
    }));
    this.#perUser = limits.filter((l) => l.rule.per === "user");
    this.#perHandler = limits.filter((l) => l.rule.per !== "user");
  }

  /** The `per: user` limits of a request (checked before routing). */
  userHits(ctx: ExecContext): readonly LimitHit[] {
    if (this.#perUser.length === 0) return NO_HITS;
    const user = ctx.userId ?? "anonymous";
    return this.#perUser.map((limit) => hit(limit, `user:${user}`, `user:${enc(user)}`));
  }

  /** The `per: handler` and `per: user_handler` limits of an agent or delegation. */
  handlerHits(target: Target, name: string, ctx: ExecContext): readonly LimitHit[] {
    if (target !== "agent" || this.#perHandler.length === 0) return NO_HITS;
    const hits: LimitHit[] = [];
    const user = ctx.userId ?? "anonymous";
    for (const limit of this.#perHandler) {
      if (!limit.re.test(name)) continue;
      hits.push(
        limit.rule.per === "handler"
          ? hit(limit, `handler:${name}`, `handler:${enc(name)}`)
          : hit(limit, `user_handler:${user}:${name}`, `user_handler:${enc(user)}:${enc(name)}`),
      );
    }
    return hits;
  }

  /** The hits this request was not counted against yet. */
  fresh(hits: readonly LimitHit[], ctx: ExecContext): readonly LimitHit[] {
    const counted = ctx.local(this.#counted);
    if (counted === undefined || hits.length === 0) return hits;
    return hits.filter((h) => !counted.has(`${ctx.requestId}\n${h.window.id}`));
  }

  /** Records that this request was counted against `hits` (after the store admitted it). */
  counted(hits: readonly LimitHit[], ctx: ExecContext): void {
    if (hits.length === 0) return;
    const record = ctx.local(this.#counted, () => new Set());
    for (const h of hits) record.add(`${ctx.requestId}\n${h.window.id}`);
  }

  /** The RATE_LIMITED refusal of `h`. */
  refusal(h: LimitHit, retryAfterMs: number, cp: Checkpoint): PolicyDecision {
    const retry = Math.max(1, Math.ceil(retryAfterMs / 1000));
    return denyDecision(
      cp,
      ErrorCode.RATE_LIMITED,
      `Rate limit "${h.limit.rule.name}" reached for ${h.key}; retry in ${retry} s.`,
      h.limit.rule.name,
      retry,
    );
  }
}

function hit(limit: Limit, key: string, encodedKey: string): LimitHit {
  const { rule } = limit;
  return {
    limit,
    key,
    window: {
      id: limit.idPrefix + encodedKey,
      limit: rule.limit,
      windowMs: rule.windowSeconds * 1000,
    },
  };
}
