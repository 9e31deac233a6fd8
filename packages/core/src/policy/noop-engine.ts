import type { ExecContext } from "../context/exec-context.js";
import { checkContext } from "../runtime/guard.js";
import type { TokenUsage } from "../types/usage.js";
import { allowDecision, recordDecision } from "./decision.js";
import type { PolicyAction, PolicyDecision, PolicyEngine } from "./types.js";

/**
 * Allows everything (context permissions are still checked by routers, tools and runtimes). Each
 * decision is still recorded as a `policy.decision` event, so traces show that no policy ran.
 *
 * @example
 * const orchestrator = new Orchestrator({ router, runtime, policy: new NoopPolicyEngine() });
 */
export class NoopPolicyEngine implements PolicyEngine {
  async evaluate(action: PolicyAction, ctx: ExecContext): Promise<PolicyDecision> {
    checkContext(ctx);
    const decision = allowDecision(action.checkpoint, "no policy", "noop");
    recordDecision(ctx, decision, action);
    return decision;
  }

  async charge(_usage: TokenUsage, ctx: ExecContext): Promise<void> {
    checkContext(ctx);
  }
}
