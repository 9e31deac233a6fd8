import type { Job } from "bullmq";
import type { ClaimRequest, ClaimedRun } from "../store.js";
import { claimRun } from "../transitions.js";
import { RunStatus, isFinalStatus, type RunRecord } from "../types.js";
import type { RedisRecords } from "./records.js";

/** What this process holds of a run it claimed: the record as written, and the BullMQ job. */
export interface Held {
  run: RunRecord;
  v: number;
  readonly job: Job;
  readonly token: string;
}

/**
 * Turns a delivered job into a claimed run, or disposes of it and answers `null`. The record
 * decides, not the job: a job whose record is not written yet waits (up to `orphanSeconds`), one
 * for a run that is final, paused or delivered by a newer job is dropped, one that came early
 * goes back to the delayed set.
 */
export async function takeJob(
  records: RedisRecords,
  job: Job,
  token: string,
  request: ClaimRequest,
  orphanSeconds: number,
): Promise<{ claimed: ClaimedRun; held: Held } | null> {
  const runId = (job.data as { runId?: string }).runId ?? "";
  const leaseMs = Math.round(request.leaseSeconds * 1000);
  // The common case (a pending, due run of this job) in one script; any other, read and decide.
  const fast = await records.claimFast(
    runId,
    request.queue,
    job.id ?? "",
    request.workerId,
    leaseMs,
    Date.now(),
  );
  if (fast !== null) {
    return {
      held: { run: fast.run, v: fast.v, job, token },
      claimed: {
        run: fast.run,
        lease: { runId, workerId: request.workerId, fence: fast.run.fence },
        steps: fast.steps,
        inputs: fast.inputs,
        checkpoint: fast.checkpoint,
      },
    };
  }
  const { run, v, job: current, steps, inputs, checkpoint } = await records.readForClaim(runId);
  const drop = () => job.moveToCompleted(null, token, false).catch(() => undefined);
  if (run === null) {
    const age = Date.now() - job.timestamp;
    if (age > orphanSeconds * 1000) await drop();
    else
      await job
        .moveToDelayed(Date.now() + Math.min(5_000, 100 + age), token)
        .catch(() => undefined);
    return null;
  }
  const now = Date.now();
  if (current !== job.id || isFinalStatus(run.status) || run.status === RunStatus.PAUSED) {
    await drop();
    return null;
  }
  if (run.status === RunStatus.PENDING && run.availableAt > now) {
    await job.moveToDelayed(run.availableAt, token).catch(() => undefined);
    return null;
  }
  if (run.status === RunStatus.RUNNING && run.lease !== null && run.lease.expiresAt > now) {
    // BullMQ saw the lock lapse before the record's lease did: look again when the lease ends.
    await job.moveToDelayed(run.lease.expiresAt + 1, token).catch(() => undefined);
    return null;
  }
  const t = claimRun(run, request.workerId, leaseMs, now);
  const [code, nv] = await records.commit(t.run, v, t.events, { kind: "" });
  if (code !== 1) {
    // Someone changed the record in between (a cancel, a resume): let BullMQ deliver again.
    await job.moveToDelayed(Date.now() + 10, token).catch(() => undefined);
    return null;
  }
  if (!t.claimed) {
    await drop();
    return null;
  }
  return {
    held: { run: t.run, v: Number(nv), job, token },
    claimed: {
      run: t.run,
      lease: { runId, workerId: request.workerId, fence: t.run.fence },
      steps,
      inputs,
      checkpoint,
    },
  };
}
