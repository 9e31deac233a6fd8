import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import type { AgentRuntime } from "../runtime/types.js";
import type { RouteCandidate, RouteResult, Router } from "./types.js";

/**
 * The router of an orchestrator given none: every message goes to the runtime's only handler.
 * With no handler, or several, a request fails with INVALID_OPTIONS asking for a router.
 */
export function onlyHandlerRouter(runtime: AgentRuntime): Router {
  return {
    spanless: true,
    async classify(_message: string, _ctx: ExecContext): Promise<RouteResult> {
      const names = runtime.handlerNames();
      if (names.length !== 1) {
        throw new NervaError(
          ErrorCode.INVALID_OPTIONS,
          `Invalid options.router: without one, the orchestrator sends every message to the runtime's only handler, but the runtime has ${names.length === 0 ? "none" : `${names.length} (${names.slice(0, 5).join(", ")})`}. Register one handler, or pass a router (e.g. new RuleRouter({ rules, fallback })).`,
          { issues: [{ path: "options.router", message: "required with more than one handler" }] },
        );
      }
      const best: RouteCandidate = {
        name: names[0] as string,
        score: 1,
        reason: "the only handler",
      };
      return { candidates: [best], best };
    },
  };
}
