// What the dashboard's API says about a graph (its shape, the answers its input nodes allow) and
// about a run (its result for the page, with when it was created and last changed).
import type { GraphHost, RunRecord, RunStore } from "@nerva/core";

/** The JSON Schema of an input node's answer, or `null` when it has none that JSON can say. */
function answerSchema(schema: unknown): unknown {
  const convert = (schema as { toJSONSchema?: () => Record<string, unknown> } | undefined)
    ?.toJSONSchema;
  if (typeof convert !== "function") return null;
  try {
    const { $schema: _dialect, ...rest } = convert.call(schema);
    return rest;
  } catch {
    // A schema with transforms or custom checks has no JSON form: the page shows no hint.
    return null;
  }
}

/** The graph's shape for the page: nodes, edges, entry points, the answers input nodes allow. */
export function describe(runtime: GraphHost): Record<string, unknown> {
  const g = runtime.graph;
  const edges: { from: string; to: string; type: string }[] = [];
  for (const [from, e] of g.edges) {
    if (e.type === "static") edges.push({ from, to: e.to, type: "static" });
    else if (e.type === "fanout") for (const to of e.to) edges.push({ from, to, type: "fanout" });
    else
      for (const to of e.targets ?? [...g.nodeIds, "__end__"])
        edges.push({ from, to, type: "conditional" });
  }
  const answers: Record<string, unknown> = {};
  for (const id of g.nodeIds) {
    const schema = answerSchema(g.nodes.get(id)?.inputSchema);
    if (schema !== null) answers[id] = schema;
  }
  return {
    name: g.name,
    entry: g.entry,
    nodes: g.nodeIds.map((id) => ({ id, kind: g.nodes.get(id)?.kind ?? "?" })),
    edges,
    entryPoints: runtime.getEntryPoints(),
    answers,
  };
}

/** When run `run` was created and last changed (its last event), in epoch ms. */
export async function times(
  store: RunStore,
  run: RunRecord,
): Promise<{ createdAt: number; updatedAt: number }> {
  const [last] = await store.readEvents(run.id, Math.max(0, run.lastSeq - 1), 1);
  return { createdAt: run.createdAt, updatedAt: last?.at ?? run.createdAt };
}

/** A run for the page: no sessionState, with its times. */
export async function shown(runtime: GraphHost, store: RunStore, id: string): Promise<unknown> {
  const run = await store.get(id);
  const r = run === null ? null : await runtime.get(id);
  if (run === null || r === null) return null;
  return { ...r, sessionState: null, ...(await times(store, run)) };
}
