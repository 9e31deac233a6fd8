import { ErrorCode, NervaError, parseOrThrow } from "../../errors.js";
import { checkUntrustedJson } from "../../internal/json-limits.js";
import { RunStatus, type RunRecord } from "../../runs/types.js";
import { AgentStatus } from "../../types/status.js";
import { parseNodeKey } from "./run-events.js";
import type { Graph } from "../define/types.js";

/**
 * The value `resume` answers graph run `run` with: INVALID_STATE when it is not paused at a
 * node, INVALID_INPUT when `content` does not fit the node's schema (or, for an agent node
 * waiting for data, is not `{ args }`).
 */
export function checkAnswer(graph: Graph, run: RunRecord, content: unknown): unknown {
  const runId = run.id;
  const at = run.status === RunStatus.PAUSED ? parseNodeKey(run.pause?.key ?? "") : null;
  if (at === null) {
    throw new NervaError(
      ErrorCode.INVALID_STATE,
      `Run ${runId} is ${run.status}, not paused: nothing waits for an answer. Resume a run whose status is "paused".`,
      { details: { runId, status: run.status } },
    );
  }
  const nodeId = at.nodeId;
  // Named "answer" in what the person who answers sees: `content` is only this parameter's name.
  checkUntrustedJson(content, "answer", "Send plain JSON.");
  const node = graph.nodes.get(nodeId);
  const schema = node?.inputSchema;
  let value = content;
  if (schema !== undefined) {
    value = parseOrThrow(
      schema,
      content,
      ErrorCode.INVALID_INPUT,
      "answer",
      `Answer node "${nodeId}" with a value its schema accepts.`,
    );
  } else if (
    run.pause?.kind === AgentStatus.NEEDS_DATA ||
    run.pause?.kind === AgentStatus.NEEDS_CREDENTIALS
  ) {
    const ok =
      typeof content === "object" &&
      content !== null &&
      typeof (content as { args?: unknown }).args === "object";
    if (!ok) {
      throw new NervaError(
        ErrorCode.INVALID_INPUT,
        `Invalid answer: node "${nodeId}" waits for ${run.pause.kind}; answer { args: { name: "value" } }.`,
        {
          issues: [{ path: "answer.args", message: "required" }],
        },
      );
    }
  }
  return value;
}
