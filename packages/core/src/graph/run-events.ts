/**
 * The custom run events graph executions write (besides the run's own `run.*`, `step.*` and
 * `output.*` events): the event bus reads them back as typed events.
 */
export const GraphRunEvent = {
  NODE_FAILED: "graph.node_failed",
  TOOL_CALL_STARTED: "graph.tool_call_started",
  TOOL_CALL_COMPLETED: "graph.tool_call_completed",
  INPUT_REQUESTED: "graph.input_requested",
} as const;
export type GraphRunEvent = (typeof GraphRunEvent)[keyof typeof GraphRunEvent];

/** How a node visit is named in a path: `review#2` (the second visit of `review`). */
export function nodeStepKey(nodeId: string, visit: number): string {
  return `${nodeId}#${visit}`;
}

/**
 * The run key of a node visit (its step, and the pause of its questions): `$node/review#2`.
 * Under `$`, where keys users give to `ctx.run.step` or `waitForInput` cannot reach.
 */
export function nodeRunKey(nodeId: string, visit: number): string {
  return `$node/${nodeStepKey(nodeId, visit)}`;
}

const NODE_KEY = /^\$node\/([A-Za-z_][A-Za-z0-9_-]{0,63})#([1-9][0-9]*)(?:#[1-9][0-9]*)?$/;

/** The node and visit of a node run key (or of a pause key `$node/review#2#3`), or `null`. */
export function parseNodeKey(key: string): { nodeId: string; visit: number } | null {
  const m = NODE_KEY.exec(key);
  return m === null ? null : { nodeId: m[1] as string, visit: Number(m[2]) };
}
