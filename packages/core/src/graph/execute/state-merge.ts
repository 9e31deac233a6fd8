import { GraphErrorCode, GraphFailure } from "./failure.js";
import type { Graph, GraphNode, GraphState } from "../define/types.js";

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
  const written = Object.keys(update);
  let fits = true;
  for (let i = 0; i < written.length; i++) if (!allowed.has(written[i] as string)) fits = false;
  if (fits) return update;
  const stray = written.filter((k) => !allowed.has(k));
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

/**
 * {@link mergeUpdates} of one node's update (the path of every node outside a fan-out): no
 * writer bookkeeping, since one node cannot collide with itself.
 */
export function mergeUpdate<S extends GraphState>(
  graph: Graph<S>,
  keys: ReadonlySet<string>,
  before: Record<string, unknown>,
  id: string,
  raw: unknown,
): Record<string, unknown> {
  const update = checkUpdate(graph, keys, id, raw);
  const next: Record<string, unknown> = { ...before };
  const written = Object.keys(update);
  for (let i = 0; i < written.length; i++) {
    const k = written[i] as string;
    const reducer = graph.reducers.get(k);
    next[k] = reducer === undefined ? update[k] : reducer(next[k], update[k]);
  }
  return checkState(graph, next, [id]);
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
  return checkState(
    graph,
    next,
    updates.map(([n]) => n),
  );
}

/** `next` checked against the state schema; INVALID_STATE_UPDATE naming the nodes otherwise. */
function checkState<S extends GraphState>(
  graph: Graph<S>,
  next: Record<string, unknown>,
  nodes: readonly string[],
): Record<string, unknown> {
  const parsed = graph.state.safeParse(next);
  if (!parsed.success) {
    throw new GraphFailure(
      GraphErrorCode.INVALID_STATE_UPDATE,
      `The state after node ${nodes.map((n) => `"${n}"`).join(", ")} does not fit the state schema of graph "${graph.name}": ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}.`,
      false,
      nodes[0] ?? null,
    );
  }
  return parsed.data as Record<string, unknown>;
}
