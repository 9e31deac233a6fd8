import { nodeStepKey, parseNodeKey } from "./node-keys.js";
import { RunEventType, type RunEvent } from "./types.js";

/**
 * A stored event as readers see it. A graph's node visit is a step of its run, stored as
 * `step.started` / `step.completed` under the key `$node/<node>#<visit>`: readers get it as
 * `node.started` / `node.completed` with `{ node, visit, key: "<node>#<visit>" }`, and a pause
 * at a node gets `node` too. Every other event is returned as it is.
 */
export function namedEvent(e: RunEvent): RunEvent {
  switch (e.type) {
    case RunEventType.STEP_STARTED:
    case RunEventType.STEP_COMPLETED: {
      const at = parseNodeKey(e.data.key);
      if (at === null) return e;
      return {
        ...e,
        type:
          e.type === RunEventType.STEP_STARTED
            ? RunEventType.NODE_STARTED
            : RunEventType.NODE_COMPLETED,
        data: { node: at.nodeId, visit: at.visit, key: nodeStepKey(at.nodeId, at.visit) },
      };
    }
    case RunEventType.PAUSED: {
      const at = parseNodeKey(e.data.key);
      return at === null ? e : { ...e, data: { ...e.data, node: at.nodeId } };
    }
    default:
      return e;
  }
}
