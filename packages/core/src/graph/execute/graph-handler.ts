import type { ExecContext } from "../../context/exec-context.js";
import { UnrecoverableError } from "../../errors.js";
import { ActiveRun } from "../../runs/run-context.js";
import type { AgentInput, JsonValue, PartialAgentResult } from "../../types/agent.js";
import { AgentStatus } from "../../types/status.js";
import type { GraphExecutor, GraphStart } from "./executor.js";
import { GraphFailure, isUnwind, nodeFailure } from "./failure.js";
import type { SharedStateView } from "../define/types.js";

/**
 * The handler every run of a graph runs (under the graph's name): the executor inside the
 * run. A completed graph is a success with its snapshot and output in `data`; a failed one an
 * error result whose `data` says the code and the node. A failure no retry can help is told to
 * the run the one way user code tells it too: as an {@link UnrecoverableError}.
 */
export function graphHandler(
  executor: GraphExecutor,
  shared: () => SharedStateView,
  onStart: (ctx: ExecContext) => Promise<void>,
): (input: AgentInput, ctx: ExecContext) => Promise<PartialAgentResult> {
  const graph = executor.graph;
  return async (input, ctx): Promise<PartialAgentResult> => {
    const start = JSON.parse(input.message) as GraphStart;
    await onStart(ctx);
    try {
      const snapshot = await executor.execute(start, ctx, shared());
      const output = graph.output === null ? null : graph.output(snapshot.state);
      return {
        output: typeof output === "string" ? output : JSON.stringify(output),
        data: { graph: snapshot as unknown as JsonValue, output },
      };
    } catch (err) {
      if (isUnwind(err)) throw err;
      const f = err instanceof GraphFailure ? err : nodeFailure(err, start.node ?? graph.entry);
      if (!f.retriable && ctx.run instanceof ActiveRun) {
        ctx.run.note(new UnrecoverableError(f.message, { cause: f }));
      }
      return {
        status: AgentStatus.ERROR,
        error: f.message,
        data: {
          code: f.code,
          nodeId: f.nodeId,
          ...(f.snapshot === null ? {} : { graph: f.snapshot as unknown as JsonValue }),
        },
      };
    }
  };
}
