import type { RunQueue } from "../../runs/run-queue.js";
import { RunEventType, type RunEvent, type RunRecord } from "../../runs/types.js";

/**
 * Follows one graph run's events in order and names the node of each `output.delta` while one
 * node runs (`data.node`), as `node.started` / `node.completed` say which nodes run. Events of
 * nodes the graph does not have (`nodeIds`) are left out.
 */
export class NodeTracker {
  readonly #running = new Set<string>();
  constructor(readonly nodeIds: ReadonlySet<string> | null = null) {}

  /** `e` as subscribers get it, or `null` for a node event of a node this graph lacks. */
  track(e: RunEvent): RunEvent | null {
    switch (e.type) {
      case RunEventType.NODE_STARTED:
      case RunEventType.NODE_COMPLETED: {
        const node = String(e.data.node);
        if (this.nodeIds !== null && !this.nodeIds.has(node)) return null;
        if (e.type === RunEventType.NODE_STARTED) this.#running.add(node);
        else this.#running.delete(node);
        return e;
      }
      case RunEventType.NODE_FAILED:
        this.#running.delete(String(e.data.node));
        return e;
      case RunEventType.OUTPUT_DELTA: {
        if (this.#running.size !== 1) return e;
        return { ...e, data: { ...e.data, node: [...this.#running][0] as string } };
      }
      case RunEventType.PAUSED:
      case RunEventType.RETRYING:
        this.#running.clear();
        return e;
      default:
        return e;
    }
  }
}

/**
 * The events of graph run `run` from the durable log: those after `afterSeq`, then live ones
 * until it ends (or `signal` aborts).
 */
export async function* replayEvents(
  queue: RunQueue,
  run: RunRecord,
  nodeIds: ReadonlySet<string>,
  options: { afterSeq?: number; types?: readonly string[]; signal?: AbortSignal },
): AsyncGenerator<RunEvent, void, undefined> {
  const tracker = new NodeTracker(nodeIds);
  const types = options.types === undefined ? null : new Set<string>(options.types);
  // Replay from the start so the tracker knows which nodes run, then skip what was asked.
  const after = options.afterSeq ?? 0;
  for await (const e of queue.events(
    run.id,
    options.signal === undefined ? {} : { signal: options.signal },
  )) {
    const g = tracker.track(e);
    if (g !== null && e.seq > after && (types === null || types.has(g.type))) yield g;
  }
}
