import type { ClaimRequest, ClaimedRun } from "../store.js";
import { claimRun } from "../transitions.js";
import { RunStatus, type RunRecord } from "../types.js";
import type { ClaimAnswer, FastClaim, RedisRecords } from "./records.js";

/** What this process holds of a run it claimed: the record as written, and its version. */
export interface Held {
  run: RunRecord;
  v: number;
}

/** A claim as the store answers it, and what this process keeps of it. */
export interface Taken {
  readonly claimed: ClaimedRun;
  readonly held: Held;
}

/**
 * What the claim script's `answer` gives `request`: the run it claimed, or what the
 * read-and-write path makes of the candidate it named; `null` for none (nothing due, or the
 * candidate was not claimable after all).
 */
export function takeAnswer(
  records: RedisRecords,
  answer: ClaimAnswer,
  request: ClaimRequest,
  leaseMs: number,
): Promise<Taken | null> | Taken | null {
  if (answer.kind === "claimed") return takenFrom(answer, request.workerId);
  if (answer.kind === "check") return claimChecked(records, answer.runId, request, leaseMs);
  return null;
}

/** The claim of a run the claim script claimed. */
function takenFrom(fast: FastClaim, workerId: string): Taken {
  return {
    held: { run: fast.run, v: fast.v },
    claimed: {
      run: fast.run,
      lease: { runId: fast.run.id, workerId, fence: fast.run.fence },
      steps: fast.steps,
      inputs: fast.inputs,
      checkpoint: fast.checkpoint,
    },
  };
}

/**
 * The read-and-write path of a claim, for a run the claim script named but left to the caller: a
 * running run whose lease lapsed (reclaimed, or failed once past its `maxReclaims`), or a pending
 * record written before the record split. The record decides: a run it shows not claimable has
 * its queue entries put right (a pruned run's removed, a stale score rewritten), so the script
 * does not name it again; a write that loses a race answers `null` and the caller looks again.
 */
async function claimChecked(
  records: RedisRecords,
  runId: string,
  request: ClaimRequest,
  leaseMs: number,
): Promise<Taken | null> {
  const { run, v, steps, inputs, checkpoint } = await records.readForClaim(runId);
  const now = Date.now();
  const claimable =
    run !== null &&
    ((run.status === RunStatus.PENDING && run.availableAt <= now) ||
      (run.status === RunStatus.RUNNING && run.lease !== null && run.lease.expiresAt <= now));
  if (!claimable) {
    await records.reindex(runId, request.queue, run);
    return null;
  }
  const t = claimRun(run, request.workerId, leaseMs, now);
  const [code, nv] = await records.commit(t.run, v, t.events, { kind: "" });
  if (code !== 1 || !t.claimed) return null;
  return {
    held: { run: t.run, v: Number(nv) },
    claimed: {
      run: t.run,
      lease: { runId, workerId: request.workerId, fence: t.run.fence },
      steps,
      inputs,
      checkpoint,
    },
  };
}
