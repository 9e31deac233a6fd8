// The span of one attempt of a durable run, on the worker that executes it. The run's context
// comes from the wire with the enqueuer's trace id and its `runs.enqueue` span as the current
// span, so this span (and everything the handler does) nests under the enqueuer's trace.
import type { ExecContext } from "../context/exec-context.js";
import type { StartSpanOptions } from "../context/options.js";
import { messageOf } from "../runtime/results.js";
import type { AgentResult } from "../types/agent.js";
import { AgentStatus } from "../types/status.js";
import { RunPaused } from "./run-context.js";
import type { RunRecord } from "./types.js";

const SERVER: StartSpanOptions = Object.freeze({ kind: "server" });

/**
 * Runs `attempt` with a fork of `ctx` whose spans nest under a `run` span (kind `server`,
 * attributes `run.id`, `run.queue`, `run.attempt`, `handler`), ended with the attempt's outcome:
 * `ok` for a success or a pause, `error` otherwise.
 */
export async function inRunSpan(
  ctx: ExecContext,
  run: RunRecord,
  attempt: (scoped: ExecContext) => Promise<AgentResult>,
): Promise<AgentResult> {
  const span = ctx.startSpan(
    "run",
    {
      "run.id": run.id,
      "run.queue": run.queue,
      "run.attempt": run.attempt,
      handler: run.handlers.join(","),
    },
    SERVER,
  );
  const scoped = ctx.fork({ span });
  try {
    const result = await ctx.runInSpan(span, () => attempt(scoped));
    if (result.status === AgentStatus.SUCCESS) {
      span.end("ok");
    } else {
      span.setAttribute("status", result.status);
      span.end("error", result.error ?? result.status);
    }
    return result;
  } catch (err) {
    if (err instanceof RunPaused) {
      span.setAttribute("run.paused", true);
      span.end("ok");
    } else {
      span.end("error", messageOf(err));
    }
    throw err;
  } finally {
    scoped.dispose();
  }
}
