import { z } from "zod";
import { ErrorCode, NervaError } from "../../errors.js";
import { HandlerNameSchema } from "../../runtime/options.js";
import {
  END,
  type Edge,
  type EdgeSpec,
  type Graph,
  type GraphDefinition,
  type GraphNode,
  type GraphState,
  type Reducer,
  type StateSchema,
} from "./types.js";

/** Node ids: they are also parts of step keys (`review#2`). */
const NODE_ID = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/;

function invalid(path: string, message: string): NervaError {
  return new NervaError(ErrorCode.INVALID_OPTIONS, `Invalid graph ${path}: ${message}`, {
    issues: [{ path, message }],
  });
}

const list = (ids: Iterable<string>): string => [...ids].map((i) => `"${i}"`).join(", ");

function checkNode(id: string, node: unknown, keys: ReadonlySet<string>): GraphNode {
  if (!NODE_ID.test(id) || id === END) {
    throw invalid(
      `nodes.${id}`,
      `node id "${id}" must be 1-64 letters, digits, '_' or '-' starting with a letter or '_' (and not "${END}").`,
    );
  }
  const n = node as Partial<GraphNode> | null;
  if (typeof n !== "object" || n === null || typeof n.run !== "function") {
    throw invalid(
      `nodes.${id}`,
      "must be a node: build it with agentNode(...), fnNode(...) or inputNode(...).",
    );
  }
  for (const field of ["reads", "writes"] as const) {
    for (const key of n[field] ?? []) {
      if (!keys.has(key)) {
        throw invalid(
          `nodes.${id}.${field}`,
          `"${key}" is not a key of the state schema (keys: ${list(keys)}). Add it to the schema or fix the name.`,
        );
      }
    }
  }
  if (n.maxVisits !== undefined && !(Number.isInteger(n.maxVisits) && n.maxVisits >= 1)) {
    throw invalid(`nodes.${id}.maxVisits`, "must be an integer >= 1.");
  }
  return n as GraphNode;
}

function edgeOf(
  spec: EdgeSpec,
  index: number,
  nodes: ReadonlyMap<string, GraphNode>,
): { from: string; edge: Edge } {
  const path = `edges[${index}]`;
  if (!Array.isArray(spec) || spec.length < 2 || spec.length > 3) {
    throw invalid(path, "must be [from, to], [from, [a, b]] or [from, (state) => next, targets?].");
  }
  const [from, to, targets] = spec as [unknown, unknown, unknown];
  const known = (id: unknown, where: string, allowEnd: boolean): string => {
    if (typeof id === "string" && (nodes.has(id) || (allowEnd && id === END))) return id;
    throw invalid(
      where,
      `unknown node ${JSON.stringify(id)} in an edge (nodes: ${list(nodes.keys())}${allowEnd ? ", or END" : ""}).`,
    );
  };
  known(from, `${path}[0]`, false);
  const source = from as string;
  if (typeof to === "function") {
    let declared: string[] | null = null;
    if (targets !== undefined) {
      if (!Array.isArray(targets) || targets.length === 0) {
        throw invalid(`${path}[2]`, "the targets of a conditional edge must be a non-empty list.");
      }
      declared = targets.map((t, i) => known(t, `${path}[2][${i}]`, true));
    }
    return {
      from: source,
      edge: { type: "conditional", route: to as (state: GraphState) => string, targets: declared },
    };
  }
  if (targets !== undefined) {
    throw invalid(`${path}[2]`, "only a conditional edge (a function) takes a list of targets.");
  }
  if (Array.isArray(to)) {
    if (to.length < 2 || new Set(to).size !== to.length) {
      throw invalid(`${path}[1]`, "a fan-out lists at least two different nodes.");
    }
    const branches = to.map((t, i) => known(t, `${path}[1][${i}]`, false));
    return { from: source, edge: { type: "fanout", to: branches, join: "" } };
  }
  return { from: source, edge: { type: "static", to: known(to, `${path}[1]`, true) } };
}

function successors(edge: Edge | undefined, all: readonly string[]): readonly string[] {
  if (edge === undefined) return [];
  switch (edge.type) {
    case "static":
      return [edge.to];
    case "fanout":
      return edge.to;
    case "conditional":
      return edge.targets ?? [...all, END];
  }
}

/** Sets the join of every fan-out: the one node all its branches have a static edge to. */
function resolveJoins(edges: Map<string, Edge>, nodes: ReadonlyMap<string, GraphNode>): void {
  for (const [from, edge] of edges) {
    if (edge.type !== "fanout") continue;
    const joins = new Set<string>();
    for (const branch of edge.to) {
      const out = edges.get(branch);
      if (out?.type !== "static") {
        throw invalid(
          `edges (fan-out from "${from}")`,
          `branch "${branch}" needs exactly one static edge to the join node (e.g. ["${branch}", "next"]); it has ${out === undefined ? "none" : `a ${out.type} edge`}.`,
        );
      }
      joins.add(out.to);
    }
    if (joins.size !== 1) {
      throw invalid(
        `edges (fan-out from "${from}")`,
        `branches ${list(edge.to)} must all join at one node; they go to ${list(joins)}.`,
      );
    }
    const writers = new Map<string, string>();
    for (const branch of edge.to) {
      for (const key of nodes.get(branch)?.writes ?? []) {
        const other = writers.get(key);
        if (other !== undefined) {
          throw invalid(
            `edges (fan-out from "${from}")`,
            `branches "${other}" and "${branch}" both write "${key}" in parallel; give "${key}" a reducer (reducers: { ${key}: Reducers.append }) or let one branch write it.`,
          );
        }
        writers.set(key, branch);
      }
    }
    edges.set(from, { ...edge, join: [...joins][0] as string });
  }
}

function checkReachability(
  entries: readonly string[],
  edges: ReadonlyMap<string, Edge>,
  ids: readonly string[],
): void {
  const seen = new Set<string>(entries);
  const queue = [...entries];
  while (queue.length > 0) {
    const id = queue.pop() as string;
    for (const next of successors(edges.get(id), ids)) {
      if (next !== END && !seen.has(next)) {
        seen.add(next);
        queue.push(next);
      }
    }
  }
  const unreachable = ids.filter((id) => !seen.has(id));
  if (unreachable.length > 0) {
    throw invalid(
      "edges",
      `unreachable node${unreachable.length > 1 ? "s" : ""} ${list(unreachable)}: no edge leads there from the entry ${list(entries)}. Add an edge to it, list it in entries, or remove it.`,
    );
  }
  // Which nodes can reach END, walking the edges backwards.
  const preds = new Map<string, string[]>();
  for (const id of ids) {
    for (const next of successors(edges.get(id), ids)) {
      preds.set(next, [...(preds.get(next) ?? []), id]);
    }
  }
  const ends = new Set<string>();
  const back = [END];
  while (back.length > 0) {
    const id = back.pop() as string;
    for (const p of preds.get(id) ?? []) {
      if (!ends.has(p)) {
        ends.add(p);
        back.push(p);
      }
    }
  }
  const stuck = ids.filter((id) => !ends.has(id));
  if (stuck.length > 0) {
    throw invalid(
      "edges",
      `no path to END from ${list(stuck)}: every node needs a way to finish. Add an edge to END (e.g. ["${stuck[0]}", END]) or to a node that reaches it.`,
    );
  }
}

/** Marks what defineGraph made (a registered symbol: the ESM and CommonJS builds agree). */
const GRAPH_BRAND = Symbol.for("nerva.graph");

/**
 * Whether `value` is a graph {@link defineGraph} made (not merely graph-shaped).
 *
 * @example
 * if (!isDefinedGraph(mod.graph)) throw new Error("export a graph made by defineGraph");
 */
export function isDefinedGraph(value: unknown): value is Graph {
  return (
    typeof value === "object" &&
    value !== null &&
    (value as Record<symbol, unknown>)[GRAPH_BRAND] === true
  );
}

/**
 * Defines a graph and validates it at once: a `NervaError` INVALID_OPTIONS names the problem
 * (unknown node in an edge, unreachable node, no path to `END`, two unconditional edges from a
 * node, a state schema that is not a zod object, ...).
 *
 * @example
 * const graph = defineGraph({
 *   name: "greeter",
 *   state: z.object({ name: z.string(), greeting: z.string().optional() }),
 *   nodes: { greet: fnNode((s) => ({ greeting: `Hello, ${s.name}!` })) },
 *   edges: [["greet", END]],
 *   entry: "greet",
 * });
 */
export function defineGraph<Schema extends StateSchema>(
  definition: GraphDefinition<Schema>,
): Graph<z.output<Schema>> {
  const d = definition as GraphDefinition<StateSchema> | null;
  if (typeof d !== "object" || d === null) {
    throw invalid("definition", "pass { name, state, nodes, edges, entry }.");
  }
  if (!HandlerNameSchema.safeParse(d.name).success) {
    throw invalid(
      "name",
      'must be 1-128 letters, digits, "_", ".", ":" or "-" (it is the handler name runs run under).',
    );
  }
  if (!(d.state instanceof z.ZodObject)) {
    throw invalid(
      "state",
      "the state schema must be a zod object (z.object({ ... })): each key is a channel nodes read and write.",
    );
  }
  const keys = new Set(Object.keys(d.state.shape));
  if (typeof d.nodes !== "object" || d.nodes === null || Object.keys(d.nodes).length === 0) {
    throw invalid("nodes", "give at least one node, e.g. { start: fnNode((s) => ({})) }.");
  }
  const nodes = new Map<string, GraphNode>();
  for (const [id, node] of Object.entries(d.nodes)) nodes.set(id, checkNode(id, node, keys));
  const ids = [...nodes.keys()];
  const entries = [d.entry, ...(d.entries ?? [])];
  entries.forEach((e, i) => {
    if (typeof e !== "string" || !nodes.has(e)) {
      throw invalid(
        i === 0 ? "entry" : `entries[${i - 1}]`,
        `unknown node ${JSON.stringify(e)} (nodes: ${list(ids)}).`,
      );
    }
  });
  if (!Array.isArray(d.edges)) throw invalid("edges", "must be a list of edges.");
  const edges = new Map<string, Edge>();
  d.edges.forEach((spec, i) => {
    const { from, edge } = edgeOf(spec as EdgeSpec, i, nodes);
    const before = edges.get(from);
    if (before !== undefined) {
      const both = before.type === "static" && edge.type === "static";
      throw invalid(
        `edges[${i}]`,
        both
          ? `two unconditional edges from "${from}" (to "${before.to}" and to "${(edge as { to: string }).to}"): a node has one next node; use a fan-out ["${from}", ["${before.to}", "${(edge as { to: string }).to}"]] to run both, or a conditional edge to choose.`
          : `"${from}" already has an outgoing edge (${before.type}); a node has exactly one: combine them into one conditional edge or fan-out.`,
      );
    }
    edges.set(from, edge);
  });
  resolveJoins(edges, nodes);
  checkReachability(entries, edges, ids);
  const reducers = new Map<string, Reducer<unknown>>();
  for (const [key, fn] of Object.entries(d.reducers ?? {})) {
    if (!keys.has(key)) {
      throw invalid(
        `reducers.${key}`,
        `"${key}" is not a key of the state schema (keys: ${list(keys)}).`,
      );
    }
    if (typeof fn !== "function")
      throw invalid(`reducers.${key}`, "must be a function (current, update) => next.");
    reducers.set(key, fn as unknown as Reducer<unknown>);
  }
  const maxSteps = d.maxSteps ?? 100;
  if (!Number.isInteger(maxSteps) || maxSteps < 1 || maxSteps > 1_000_000) {
    throw invalid("maxSteps", "must be an integer from 1 to 1000000.");
  }
  if (d.output !== undefined && typeof d.output !== "function") {
    throw invalid("output", "must be a function (state) => JSON value.");
  }
  return Object.freeze({
    [GRAPH_BRAND]: true,
    name: d.name,
    state: d.state,
    nodes,
    nodeIds: ids,
    edges,
    entry: d.entry,
    reducers,
    maxSteps,
    output: d.output ?? null,
    description: d.description ?? "",
  }) as unknown as Graph<z.output<Schema>>;
}
