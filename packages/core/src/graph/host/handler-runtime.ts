import type { ExecContext } from "../../context/exec-context.js";
import { ErrorCode, NervaError } from "../../errors.js";
import { Runner } from "../../runs/runner.js";
import { InProcessRuntime } from "../../runtime/in-process-runtime.js";
import type { AgentInput, PartialAgentResult } from "../../types/agent.js";
import type { ParsedGraphHostOptions } from "./host-options.js";

/**
 * The runtime the runners execute the graph handler on: its own InProcessRuntime, or (with a
 * shared `runner`) the InProcessRuntime that runner executes, the handler registered on it.
 */
export function handlerRuntime(
  o: ParsedGraphHostOptions,
  handler: (input: AgentInput, ctx: ExecContext) => Promise<PartialAgentResult>,
): InProcessRuntime {
  const options = { timeoutSeconds: o.executionTimeoutSeconds, circuitBreaker: false as const };
  if (!(o.runner instanceof Runner)) {
    return new InProcessRuntime(options).register(o.graph.name, handler);
  }
  if (!(o.runtime instanceof InProcessRuntime)) {
    throw new NervaError(
      ErrorCode.INVALID_OPTIONS,
      "Invalid options.runtime: with an existing runner, runtime must be the InProcessRuntime that runner executes (the graph registers its handler on it).",
      { issues: [{ path: "options.runtime", message: "must be an InProcessRuntime" }] },
    );
  }
  if (!o.runtime.handlerNames().includes(o.graph.name)) {
    o.runtime.register(o.graph.name, handler, options);
  }
  return o.runtime;
}
