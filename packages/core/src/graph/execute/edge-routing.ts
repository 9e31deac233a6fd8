import { GraphErrorCode, GraphFailure } from "./failure.js";
import { END, type Graph, type GraphState } from "../define/types.js";

/** The nodes after `id` given the state after it. */
export function routeAfter<S extends GraphState>(
  graph: Graph<S>,
  id: string,
  state: Record<string, unknown>,
): readonly string[] {
  const edge = graph.edges.get(id);
  if (edge === undefined) return [END];
  if (edge.type === "static") return [edge.to];
  if (edge.type === "fanout") return edge.to;
  let next: unknown;
  try {
    next = edge.route(state as S);
  } catch (err) {
    throw new GraphFailure(
      GraphErrorCode.INVALID_ROUTE,
      `The conditional edge from "${id}" threw: ${err instanceof Error ? err.message : String(err)}`,
      false,
      id,
      { cause: err },
    );
  }
  const ok =
    typeof next === "string" &&
    (next === END || graph.nodes.has(next)) &&
    (edge.targets === null || edge.targets.includes(next));
  if (!ok) {
    throw new GraphFailure(
      GraphErrorCode.INVALID_ROUTE,
      `The conditional edge from "${id}" chose ${JSON.stringify(next)}, which is not ${edge.targets === null ? "a node of the graph or END" : `one of its targets (${edge.targets.join(", ")})`}.`,
      false,
      id,
    );
  }
  return [next as string];
}

/** Where a fan-out joins: the target of its first branch's static edge (END without one). */
export function joinTarget<S extends GraphState>(
  graph: Graph<S>,
  branches: readonly string[],
): readonly string[] {
  const edge = graph.edges.get(branches[0] as string);
  return [edge?.type === "static" ? edge.to : END];
}
