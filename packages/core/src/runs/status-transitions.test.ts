// The table of run status changes is what the state machine does: every transition function,
// from every status it accepts, changes the status only along the table, and every row of the
// table is made by one of them.
import { describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { isNervaError } from "../errors.js";
import { agentResult } from "../types/agent.js";
import { newRunId } from "./run-queue.js";
import { RUN_STATUS_TRANSITIONS, checkRunTransition } from "./status-transitions.js";
import type { LeaseRef, NewRun } from "./store.js";
import * as T from "./transitions.js";
import { RUN_STATUSES, RunStatus, type RunRecord } from "./types.js";

const init: NewRun = {
  id: newRunId(),
  queue: "q",
  handlers: ["h"],
  input: { message: "hi", args: {}, tools: [], history: [] },
  retry: {
    maxAttempts: 3,
    initialDelaySeconds: 0,
    backoffFactor: 2,
    maxDelaySeconds: 1,
    jitter: 0,
  },
  maxReclaims: 1,
  priority: 0,
  timeoutSeconds: null,
  idempotencyKey: null,
  context: ExecContext.create().toWire(),
  delaySeconds: 0,
};
const error = { code: "HANDLER_ERROR", message: "boom", retriable: true };
const result = agentResult("h", { output: "ok" });
const pause = { key: "k", prompt: "?", kind: "input", data: {} };

/** A run in `status` (a running one holds a lease of `w1`, expired when `expired`). */
function runIn(status: RunStatus, options: { expired?: boolean; cancel?: boolean } = {}) {
  const run: T.Draft = { ...T.createRun(init, 0).run, status, cancelRequested: !!options.cancel };
  if (status === RunStatus.RUNNING) {
    run.fence = 1;
    run.lease = { workerId: "w1", fence: 1, expiresAt: options.expired ? 0 : 1e12 };
  }
  if (status === RunStatus.PAUSED) run.pause = pause;
  return run as RunRecord;
}
const lease: LeaseRef = { runId: init.id, workerId: "w1", fence: 1 };

/** Every transition function applied to `run`: the status each one leaves it in (null: refused). */
function moves(run: RunRecord): (RunStatus | null)[] {
  const attempt = (f: () => { run: RunRecord }): RunStatus | null => {
    try {
      return f().run.status;
    } catch (err) {
      if (isNervaError(err)) return null;
      throw err;
    }
  };
  return [
    attempt(() => T.claimRun(run, "w2", 1000, 10)),
    attempt(() => T.finishRun(run, lease, { status: RunStatus.SUCCEEDED, result }, 10)),
    ...[RunStatus.FAILED, RunStatus.TIMED_OUT, RunStatus.CANCELLED].map((status) =>
      attempt(() => T.finishRun(run, lease, { status, result: null, error }, 10)),
    ),
    attempt(() => T.pauseRun(run, lease, pause, 10)),
    attempt(() => T.retryRun(run, lease, 100, error, 10)),
    attempt(() => T.releaseRun(run, lease, 10)),
    attempt(() => T.cancelRun(run, "stop", 10)),
    attempt(() => ({ run: T.resumeRun(run, T.resumeKey(run, null), 10).run })),
    attempt(() => T.redriveRun(run, 10)),
  ];
}

describe("RUN_STATUS_TRANSITIONS", () => {
  it("holds every status change the transition functions make, and nothing they never make", () => {
    const made = new Set<string>();
    for (const status of RUN_STATUSES) {
      for (const options of [
        {},
        { expired: true },
        { cancel: true },
        { expired: true, cancel: true },
      ]) {
        const from = runIn(status, options);
        // claimRun takes over an expired lease only; a live one is not claimable.
        const claimable = T.isClaimable(from, 10);
        for (const [i, to] of moves(from).entries()) {
          if (to === null || (i === 0 && !claimable)) continue;
          expect(() => checkRunTransition(status, to), `${status} → ${to}`).not.toThrow();
          if (to !== status) made.add(`${status}>${to}`);
        }
      }
    }
    // A run reclaimed past its maxReclaims fails: running → failed through claimRun.
    const worn = { ...runIn(RunStatus.RUNNING, { expired: true }), reclaims: 1 };
    expect(T.claimRun(worn, "w2", 1000, 10).run.status).toBe(RunStatus.FAILED);
    const table = Object.entries(RUN_STATUS_TRANSITIONS).flatMap(([from, tos]) =>
      tos.map((to) => `${from}>${to}`),
    );
    expect([...made].sort()).toEqual(table.sort());
  });

  it("refuses a change off the table with INVALID_STATE and an unknown status with INVALID_INPUT", () => {
    checkRunTransition(RunStatus.RUNNING, RunStatus.RUNNING);
    expect(() => checkRunTransition(RunStatus.SUCCEEDED, RunStatus.PENDING)).toThrow(
      expect.objectContaining({ code: "INVALID_STATE" }),
    );
    expect(() => checkRunTransition(RunStatus.PENDING, RunStatus.SUCCEEDED)).toThrow(
      /from "pending" it may go to "running", "cancelled"/,
    );
    expect(() => checkRunTransition("done" as RunStatus, RunStatus.PENDING)).toThrow(
      expect.objectContaining({ code: "INVALID_INPUT" }),
    );
    expect(Object.isFrozen(RUN_STATUS_TRANSITIONS.running)).toBe(true);
  });
});
