import { GraphErrorCode, GraphFailure } from "./failure.js";
import type { Graph, GraphNode, GraphState } from "./types.js";

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" &&
  v !== null &&
  !Array.isArray(v) &&
  (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null);

/** A node's answer as an object of state keys it may write; GraphFailure otherwise. */
export function checkUpdate<S extends GraphState>(
  graph: Graph<S>,
  keys: ReadonlySet<string>,
  id: string,
  update: unknown,
): Record<string, unknown> {
  if (update === undefined || update === null) return {};
  if (!isPlainObject(update)) {
    throw new GraphFailure(
      GraphErrorCode.INVALID_STATE_UPDATE,
      `Node "${id}" returned ${Array.isArray(update) ? "an array" : `a ${typeof update}`}: a node returns an object of the state keys it changes (or nothing).`,
      false,
      id,
    );
  }
  const node = graph.nodes.get(id) as GraphNode<S>;
  const allowed = node.writes === undefined ? keys : new Set<string>(node.writes);
  const stray = Object.keys(update).filter((k) => !allowed.has(k));
  if (stray.length > 0) {
    throw new GraphFailure(
      GraphErrorCode.INVALID_STATE_UPDATE,
      `Node "${id}" wrote ${stray.map((k) => `"${k}"`).join(", ")}, which ${node.writes === undefined ? "the state schema does not have" : "it does not declare in writes"} (allowed: ${[...allowed].join(", ")}).`,
      false,
      id,
    );
  }
  return update;
}

/** Applies updates in order (reducers per key), then checks the state schema. */
export function mergeUpdates<S extends GraphState>(
  graph: Graph<S>,
  keys: ReadonlySet<string>,
  before: Record<string, unknown>,
  updates: readonly (readonly [string, unknown])[],
): Record<string, unknown> {
  const next: Record<string, unknown> = { ...before };
  const writer = new Map<string, string>();
  for (const [id, raw] of updates) {
    const update = checkUpdate(graph, keys, id, raw);
    for (const [k, v] of Object.entries(update)) {
      const reducer = graph.reducers.get(k);
      if (reducer !== undefined) {
        next[k] = reducer(next[k], v);
        continue;
      }
      const other = writer.get(k);
      if (other !== undefined) {
        throw new GraphFailure(
          GraphErrorCode.INVALID_STATE_UPDATE,
          `Nodes "${other}" and "${id}" both wrote "${k}" in one fan-out, and "${k}" has no reducer to combine them (e.g. reducers: { ${k}: Reducers.append }).`,
          false,
          id,
        );
      }
      writer.set(k, id);
      next[k] = v;
    }
  }
  const parsed = graph.state.safeParse(next);
  if (!parsed.success) {
    const id = updates.map(([n]) => `"${n}"`).join(", ");
    throw new GraphFailure(
      GraphErrorCode.INVALID_STATE_UPDATE,
      `The state after node ${id} does not fit the state schema of graph "${graph.name}": ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}.`,
      false,
      updates[0]?.[0] ?? null,
    );
  }
  return parsed.data as Record<string, unknown>;
}
