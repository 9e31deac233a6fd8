import { ErrorCode, errorPolicyOf, isNervaError } from "../../errors.js";
import { RunPaused } from "../../runs/run-context.js";
import type { GraphSnapshot } from "./node-context.js";
import { AgentNodeError } from "../define/nodes.js";

/** Error codes a run fails with, besides the ErrorCode values. */
export const GraphErrorCode = {
  /** `maxSteps` node runs were used up. */
  MAX_STEPS: "MAX_STEPS",
  /** A node was visited more than its `maxVisits`. */
  MAX_VISITS: "MAX_VISITS",
  /** A node failed (it threw, or its handler did not succeed). */
  NODE_FAILED: "NODE_FAILED",
  /** A node's answer or the state after it does not fit the state schema. */
  INVALID_STATE_UPDATE: "INVALID_STATE_UPDATE",
  /** A conditional edge chose a node that does not exist (or is not among its targets). */
  INVALID_ROUTE: "INVALID_ROUTE",
} as const;
export type GraphErrorCode = (typeof GraphErrorCode)[keyof typeof GraphErrorCode];

/** Why a run (or one node of it) failed; `retriable: false` fails the run at once. */
export class GraphFailure extends Error {
  override readonly name = "GraphFailure";
  /** Where the run stood when it failed (set by the executor). */
  snapshot: GraphSnapshot | null = null;
  constructor(
    readonly code: string,
    message: string,
    readonly retriable: boolean,
    readonly nodeId: string | null,
    options: { cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
  }
}

/** Whether `err` only unwinds the handler (a pause, a lost lease): not a failure of the node. */
export function isUnwind(err: unknown): boolean {
  return err instanceof RunPaused || isNervaError(err, ErrorCode.LEASE_LOST);
}

/** `err`, thrown by node `nodeId`, as a GraphFailure. */
export function nodeFailure(err: unknown, nodeId: string): GraphFailure {
  if (err instanceof GraphFailure) return err;
  const message = err instanceof Error ? err.message : String(err);
  const text = `Node "${nodeId}" failed: ${message}`;
  if (err instanceof AgentNodeError) {
    return new GraphFailure(GraphErrorCode.NODE_FAILED, text, err.retriable, nodeId, {
      cause: err,
    });
  }
  if (isNervaError(err)) {
    const retriable = errorPolicyOf(err.code)?.retriable ?? true;
    return new GraphFailure(err.code, text, retriable, nodeId, { cause: err });
  }
  return new GraphFailure(GraphErrorCode.NODE_FAILED, text, true, nodeId, { cause: err });
}
