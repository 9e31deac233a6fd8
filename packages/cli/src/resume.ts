import { ErrorCode, NervaError, type RunQueue, type RunRecord } from "@nerva/core";
import { AgentRunner } from "./agent-runner.js";
import { shellWord, type Values } from "./flags.js";
import { importAgentModule } from "./agent-module.js";

/** A pause key of a node visit: `review#1` or `$node/review#1`, a later question `…#1#2`. */
const NODE_PAUSE = /^(?:\$node\/)?([A-Za-z_][A-Za-z0-9_-]{0,63})#[1-9][0-9]*(?:#[1-9][0-9]*)?$/;

/** The node a run of a graph waits at, when `run` is one paused at a node. */
function graphPause(run: RunRecord): string | null {
  const snapshot = run.pause?.data.graph;
  if (typeof snapshot !== "object" || snapshot === null || Array.isArray(snapshot)) return null;
  if (typeof snapshot.node === "string") return snapshot.node;
  return NODE_PAUSE.exec(run.pause?.key ?? "")?.[1] ?? null;
}

/**
 * Answers paused run `id` with `value`. A run of a graph is answered through its agent
 * module (`--module`), so the paused node's schema checks the value before anything changes;
 * without the module its schema is unknown and the answer is refused.
 */
export async function resumeChecked(
  queue: RunQueue,
  id: string,
  value: unknown,
  values: Values,
): Promise<RunRecord> {
  const key = typeof values.key === "string" ? { key: values.key } : {};
  const run = await queue.get(id);
  if (run === null) throw new NervaError(ErrorCode.NOT_FOUND, `No run ${id} in this store.`);
  const node = graphPause(run);
  if (node === null) {
    if (typeof values.module === "string") {
      throw new NervaError(
        ErrorCode.INVALID_INPUT,
        `Run ${id} is not a run of a graph paused at a node (it is ${run.status}): drop --module.`,
      );
    }
    return queue.resume(id, value, key);
  }
  const graph = run.handlers[0] ?? "";
  if (typeof values.module !== "string") {
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      `Run ${id} is a run of graph "${graph}" waiting at node "${node}", whose schema checks the answer: pass its agent module, e.g. nerva runs resume ${id} --store ${shellWord(String(values.store))} --value ${shellWord(String(values.value))} --module agents/${graph}.ts`,
    );
  }
  if (values.key !== undefined && values.key !== run.pause?.key) {
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      `--key ${values.key} is not what run ${id} waits for ("${run.pause?.key}"): pass --key ${run.pause?.key} or leave it out.`,
    );
  }
  await importAgentModule(values.module);
  const runner = await AgentRunner.load(values.module, { runStore: queue.store });
  try {
    if (runner.runtime.graph.name !== graph) {
      throw new NervaError(
        ErrorCode.INVALID_INPUT,
        `--module ${values.module} holds graph "${runner.runtime.graph.name}", but run ${id} is a run of graph "${graph}": pass that graph's module.`,
      );
    }
    await runner.runtime.resume(id, value);
  } finally {
    await runner.cleanup();
  }
  return (await queue.get(id)) as RunRecord;
}
