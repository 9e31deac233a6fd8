import { ErrorCode, NervaError } from "../errors.js";
import { RunStatus } from "./types.js";

/**
 * Every status change a run may make, by the status it leaves: what the functions of
 * transitions.ts do (and the Redis store's scripts), as one table for whoever writes a store.
 * A reclaim keeps a run `running` (a new fence, not a new status); `succeeded` is the one status
 * nothing leaves: failed, timed-out and cancelled runs can be redriven.
 *
 * @example
 * import { RUN_STATUS_TRANSITIONS } from "@nerva/core/testing";
 * RUN_STATUS_TRANSITIONS.paused; // ["pending", "cancelled"]: resumed or cancelled
 */
export const RUN_STATUS_TRANSITIONS: Readonly<Record<RunStatus, readonly RunStatus[]>> =
  Object.freeze({
    // claimed; cancelled before it started
    [RunStatus.PENDING]: Object.freeze([RunStatus.RUNNING, RunStatus.CANCELLED]),
    // finished, paused for input, handed back or retried (pending), or failed by too many reclaims
    [RunStatus.RUNNING]: Object.freeze([
      RunStatus.SUCCEEDED,
      RunStatus.FAILED,
      RunStatus.TIMED_OUT,
      RunStatus.CANCELLED,
      RunStatus.PAUSED,
      RunStatus.PENDING,
    ]),
    // resumed; cancelled while it waited
    [RunStatus.PAUSED]: Object.freeze([RunStatus.PENDING, RunStatus.CANCELLED]),
    [RunStatus.SUCCEEDED]: Object.freeze([]),
    // redriven
    [RunStatus.FAILED]: Object.freeze([RunStatus.PENDING]),
    [RunStatus.TIMED_OUT]: Object.freeze([RunStatus.PENDING]),
    [RunStatus.CANCELLED]: Object.freeze([RunStatus.PENDING]),
  });

/**
 * Throws INVALID_STATE unless a run may go from status `from` to `to`
 * ({@link RUN_STATUS_TRANSITIONS}; staying in the same status is always allowed). A store checks
 * its own writes with it; a test checks the statuses a store's events show.
 *
 * @example
 * import { checkRunTransition } from "@nerva/core/testing";
 * checkRunTransition("paused", "pending"); // fine: a resume
 * checkRunTransition("succeeded", "pending"); // throws NervaError INVALID_STATE
 */
export function checkRunTransition(from: RunStatus, to: RunStatus): void {
  if (from === to) return;
  const allowed = RUN_STATUS_TRANSITIONS[from] as readonly RunStatus[] | undefined;
  if (allowed === undefined || !RUN_STATUS_TRANSITIONS[to]) {
    const bad = allowed === undefined ? from : to;
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      `Invalid run status "${String(bad)}": must be one of ${Object.keys(RUN_STATUS_TRANSITIONS).join(", ")}.`,
      { issues: [{ path: allowed === undefined ? "from" : "to", message: "must be a RunStatus" }] },
    );
  }
  if (!allowed.includes(to)) {
    throw new NervaError(
      ErrorCode.INVALID_STATE,
      `A run cannot go from "${from}" to "${to}": from "${from}" it may go to ${allowed.length === 0 ? "nothing (it is final for good)" : allowed.map((s) => `"${s}"`).join(", ")}.`,
      { details: { from, to } },
    );
  }
}
