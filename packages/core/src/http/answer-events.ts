import type { ExecContext } from "../context/exec-context.js";
import { errorPolicyOf } from "../errors.js";
import type { OrchestratorStream } from "../orchestrator/types.js";
import { RunEventType, type RunEvent } from "../runs/types.js";
import type { JsonValue } from "../types/agent.js";
import { AgentStatus } from "../types/status.js";
import { tokenUsageToWire } from "../types/usage.js";

/**
 * A plain request's answer (`orchestrator.stream(message, ctx)`) as the events of a run, so that
 * each protocol's one adapter (`writeUIMessageStream` of `@nerva/core/ui-stream`,
 * `writeAgUiStream` of `@nerva/core/ag-ui`) serves both: `run.started`, one
 * `output.delta` per chunk, then `run.succeeded` `{ output, usage }` or `run.failed` `{ error }`
 * (its text shown as `clientRunError` shows it). The run id is the request's id; seqs run 1, 2, 3…
 * Nothing is stored, so such a stream cannot be resumed: a chat that must survive a reconnect
 * runs its answers as durable runs (`createChatRoutes`, `createAgUiRoute`). Leaving the loop
 * cancels the request.
 *
 * @example
 * await writeUIMessageStream(res, answerEvents(orchestrator.stream(message, ctx), ctx), { runId: ctx.requestId });
 */
export async function* answerEvents(
  stream: OrchestratorStream,
  ctx: ExecContext,
): AsyncGenerator<RunEvent, void, undefined> {
  let seq = 0;
  const event = (type: string, data: Record<string, JsonValue>): RunEvent => ({
    runId: ctx.requestId,
    seq: ++seq,
    type,
    at: Date.now(),
    attempt: 1,
    data,
  });
  yield event(RunEventType.STARTED, {});
  for await (const chunk of stream) yield event(RunEventType.OUTPUT_DELTA, { chunk });
  const response = await stream.response;
  const u = ctx.tokenUsage;
  const usage: Record<string, JsonValue> =
    u.totalTokens > 0 || u.costUsd > 0 ? { usage: { ...tokenUsageToWire(u) } } : {};
  if (response.status === AgentStatus.SUCCESS) {
    yield event(RunEventType.SUCCEEDED, { output: response.text, ...usage });
    return;
  }
  const given = response.data.code;
  const code =
    typeof given === "string" && errorPolicyOf(given) !== undefined ? given : "HANDLER_ERROR";
  const type =
    response.status === AgentStatus.TIMEOUT ? RunEventType.TIMED_OUT : RunEventType.FAILED;
  const error = { code, message: response.error ?? response.status, retriable: false };
  yield event(type, { error, ...usage });
}
