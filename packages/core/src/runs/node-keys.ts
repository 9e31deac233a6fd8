// The step keys a graph gives its node visits. They live under `$`, where keys users give to
// `ctx.run.step` or `waitForInput` cannot reach, so the run's event log can name node visits.

/** How a node visit is named in a path: `review#2` (the second visit of `review`). */
export function nodeStepKey(nodeId: string, visit: number): string {
  return `${nodeId}#${visit}`;
}

/** The run key of a node visit (its step, and the pause of its questions): `$node/review#2`. */
export function nodeRunKey(nodeId: string, visit: number): string {
  return `$node/${nodeStepKey(nodeId, visit)}`;
}

const NODE_KEY = /^\$node\/([A-Za-z_][A-Za-z0-9_-]{0,63})#([1-9][0-9]*)(?:#[1-9][0-9]*)?$/;

/** The node and visit of a node run key (or of a pause key `$node/review#2#3`), or `null`. */
export function parseNodeKey(key: unknown): { nodeId: string; visit: number } | null {
  if (typeof key !== "string") return null;
  const m = NODE_KEY.exec(key);
  return m === null ? null : { nodeId: m[1] as string, visit: Number(m[2]) };
}
