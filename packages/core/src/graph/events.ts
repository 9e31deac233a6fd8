import type { JsonValue } from "../types/agent.js";
import type { RunQueue } from "../runs/run-queue.js";
import { RunEventType, type RunEvent, type RunRecord } from "../runs/types.js";
import { GraphRunEvent, nodeStepKey, parseNodeKey } from "./run-events.js";

/**
 * The typed events of graph executions (the seed's event bus). Each is one event of the
 * execution's run, with the same `seq`: replaying from an offset and tailing live read the same
 * log.
 *
 * @example
 * runtime.subscribe([EventType.CLIENT_OUTPUT_DELTA], (e) => process.stdout.write(String(e.data.chunk)));
 */
export const EventType = {
  /** The execution's first claim by a worker (`run.started` with fence 1). */
  EXECUTION_STARTED: "execution_started",
  /** A node began (`step.started` of `node#visit`); again after a pause or crash mid-node. */
  NODE_STARTED: "node_started",
  /** A node's visit was committed with the state after it (`step.completed`): once per visit. */
  NODE_COMPLETED: "node_completed",
  NODE_FAILED: "node_failed",
  TOOL_CALL_STARTED: "tool_call_started",
  TOOL_CALL_COMPLETED: "tool_call_completed",
  /** Text streamed to the client (`output.delta`); `data.chunk`. */
  CLIENT_OUTPUT_DELTA: "client_output_delta",
  /** A node asks a person; `data.prompt`, `data.kind`. */
  CLIENT_INPUT_REQUESTED: "client_input_requested",
  /** The execution waits (`run.paused`): answer with `injectInput`. */
  EXECUTION_PAUSED: "execution_paused",
  /** An answer came (`run.resumed`). */
  EXECUTION_RESUMED: "execution_resumed",
  /** A node failed and the execution will be tried again (`run.retrying`). */
  EXECUTION_RETRYING: "execution_retrying",
  EXECUTION_COMPLETED: "execution_completed",
  /** `run.failed` or `run.timed_out`. */
  EXECUTION_FAILED: "execution_failed",
  EXECUTION_CANCELLED: "execution_cancelled",
} as const;
export type EventType = (typeof EventType)[keyof typeof EventType];
export const EVENT_TYPES = Object.values(EventType) as [EventType, ...EventType[]];

/**
 * One typed event of an execution.
 *
 * @example
 * const sub = runtime.subscribe(null, (e: GraphEvent) => console.log(e.seq, e.type, e.nodeId));
 */
export interface GraphEvent {
  readonly type: EventType;
  readonly executionId: string;
  readonly entryPoint: string;
  readonly nodeId?: string;
  /** The seq of the run event it is. */
  readonly seq: number;
  /** Epoch milliseconds. */
  readonly at: number;
  readonly data: Readonly<Record<string, JsonValue>>;
}

/**
 * Reads one execution's run events as typed events, in order (it tracks the running nodes so
 * CLIENT_OUTPUT_DELTA names its node when one node runs).
 */
export class EventProjector {
  readonly #running = new Set<string>();
  constructor(
    readonly executionId: string,
    readonly entryPoint: string,
    readonly nodeIds: ReadonlySet<string> | null = null,
  ) {}

  /** The typed event of `e`, or `null` for run events that have none (leases, checkpoints…). */
  project(e: RunEvent): GraphEvent | null {
    const d = e.data;
    const make = (
      type: EventType,
      data: Record<string, JsonValue>,
      nodeId?: string,
    ): GraphEvent => ({
      type,
      executionId: this.executionId,
      entryPoint: this.entryPoint,
      ...(nodeId === undefined ? {} : { nodeId }),
      seq: e.seq,
      at: e.at,
      data,
    });
    switch (e.type) {
      case RunEventType.STARTED:
        return d.fence === 1 ? make(EventType.EXECUTION_STARTED, { ...d }) : null;
      case RunEventType.STEP_STARTED:
      case RunEventType.STEP_COMPLETED: {
        const node = this.#node(d.key);
        if (node === null) return null;
        const started = e.type === RunEventType.STEP_STARTED;
        if (started) this.#running.add(node.nodeId);
        else this.#running.delete(node.nodeId);
        return make(
          started ? EventType.NODE_STARTED : EventType.NODE_COMPLETED,
          // The visit as a path names it (`review#2`), not its run key (`$node/review#2`).
          { key: nodeStepKey(node.nodeId, node.visit), visit: node.visit },
          node.nodeId,
        );
      }
      case GraphRunEvent.NODE_FAILED:
        this.#running.delete(String(d.nodeId));
        return make(EventType.NODE_FAILED, { ...d }, String(d.nodeId));
      case GraphRunEvent.TOOL_CALL_STARTED:
        return make(EventType.TOOL_CALL_STARTED, { ...d }, String(d.nodeId));
      case GraphRunEvent.TOOL_CALL_COMPLETED:
        return make(EventType.TOOL_CALL_COMPLETED, { ...d }, String(d.nodeId));
      case GraphRunEvent.INPUT_REQUESTED:
        return make(EventType.CLIENT_INPUT_REQUESTED, { ...d }, String(d.nodeId));
      case RunEventType.OUTPUT_DELTA: {
        const only = this.#running.size === 1 ? [...this.#running][0] : undefined;
        return make(EventType.CLIENT_OUTPUT_DELTA, { chunk: String(d.chunk) }, only);
      }
      case RunEventType.PAUSED: {
        this.#running.clear();
        const node = this.#node(d.key);
        return make(EventType.EXECUTION_PAUSED, { ...d }, node?.nodeId);
      }
      case RunEventType.RESUMED:
        return make(EventType.EXECUTION_RESUMED, { ...d });
      case RunEventType.RETRYING:
        this.#running.clear();
        return make(EventType.EXECUTION_RETRYING, { ...d });
      case RunEventType.SUCCEEDED:
        return make(EventType.EXECUTION_COMPLETED, { ...d });
      case RunEventType.FAILED:
      case RunEventType.TIMED_OUT:
        return make(EventType.EXECUTION_FAILED, { ...d, status: e.type.slice(4) });
      case RunEventType.CANCELLED:
        return make(EventType.EXECUTION_CANCELLED, { ...d });
      default:
        return null;
    }
  }

  #node(key: unknown): { nodeId: string; visit: number } | null {
    if (typeof key !== "string") return null;
    const node = parseNodeKey(key);
    if (node === null || (this.nodeIds !== null && !this.nodeIds.has(node.nodeId))) return null;
    return node;
  }
}

/**
 * The typed events of `run` from the durable log: those after `afterSeq`, then live ones until
 * it ends (or `signal` aborts).
 */
export async function* replayEvents(
  queue: RunQueue,
  run: RunRecord,
  nodeIds: ReadonlySet<string>,
  options: { afterSeq?: number; types?: readonly EventType[]; signal?: AbortSignal },
): AsyncGenerator<GraphEvent, void, undefined> {
  const projector = new EventProjector(run.id, run.input.args.entryPoint ?? "default", nodeIds);
  const types = options.types === undefined ? null : new Set<string>(options.types);
  // Replay from the start so the projector knows which nodes run, then skip what was asked.
  const after = options.afterSeq ?? 0;
  for await (const e of queue.events(
    run.id,
    options.signal === undefined ? {} : { signal: options.signal },
  )) {
    const g = projector.project(e);
    if (g !== null && e.seq > after && (types === null || types.has(g.type))) yield g;
  }
}
