import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode } from "../errors.js";
import { denyDecision } from "./decision.js";
import type { PolicyDocument } from "./document.js";
import type { Checkpoint, PolicyDecision } from "./types.js";

/** What an action at `before_invoke` or `during_execution` targets. */
export type Target = "agent" | "tool";

/** Compiles `*` globs into one anchored regular expression. */
export function globs(patterns: readonly string[]): RegExp {
  const body = patterns
    .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*"))
    .join("|");
  return new RegExp(`^(?:${body})$`);
}

/** Whether the context holds one of `roles` (`false` when `roles` is absent). */
export const anyRole = (ctx: ExecContext, roles: readonly string[] | undefined): boolean =>
  roles !== undefined && roles.some((r) => ctx.permissions.hasRole(r));

type Rule = PolicyDocument["rules"][number];

/**
 * The access part of a policy document: the context's permissions, then `rules` (first match
 * wins), then the document's `default`.
 */
export class RuleSet {
  readonly #rules: readonly { readonly rule: Rule; readonly re: RegExp }[];
  readonly #denyByDefault: boolean;

  constructor(document: PolicyDocument) {
    this.#rules = document.rules.map((rule) => ({ rule, re: globs(rule.names) }));
    this.#denyByDefault = document.default === "deny";
  }

  /**
   * The refusal (PERMISSION_DENIED or POLICY_DENIED) of `target` `name` for `ctx`, or, when
   * allowed, the name of the rule that allowed it (`null` for the default).
   */
  check(
    target: Target,
    name: string,
    ctx: ExecContext,
    cp: Checkpoint,
  ): PolicyDecision | string | null {
    const allowed =
      target === "tool" ? ctx.permissions.canUseTool(name) : ctx.permissions.canUseAgent(name);
    if (!allowed) {
      return denyDecision(
        cp,
        ErrorCode.PERMISSION_DENIED,
        `This context may not use ${target} "${name}".`,
        null,
      );
    }
    const match = this.#rules.find(
      ({ rule: r, re }) =>
        (r.kind === "any" || r.kind === target) &&
        re.test(name) &&
        (r.roles === undefined || anyRole(ctx, r.roles)) &&
        !anyRole(ctx, r.unlessRoles),
    );
    if (match === undefined) {
      if (!this.#denyByDefault) return null;
      return denyDecision(
        cp,
        ErrorCode.POLICY_DENIED,
        `no rule allows ${target} "${name}" and the default is deny`,
        null,
      );
    }
    const r = match.rule;
    if (r.effect === "allow") return r.name;
    return denyDecision(
      cp,
      ErrorCode.POLICY_DENIED,
      r.reason ?? `rule "${r.name}" denies ${target} "${name}"`,
      r.name,
    );
  }
}
