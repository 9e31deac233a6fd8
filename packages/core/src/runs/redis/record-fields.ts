// How a RedisRunStore record is split across its run hash. The fields a run never changes after
// it is created (its input, context, retry policy...: most of its bytes) are written once, as
// `fix`, and `doc` holds the rest, so a transition sends, stores and frees only what changed.
// Records written before the split hold the whole record in `doc` and no `fix`: reading
// `{ ...fix, ...doc }` gives the record in both layouts.
import { claimRun } from "../transitions.js";
import type { RunRecord } from "../types.js";

/** The fields of a record that change after it is created, as the JSON stored in `doc`. */
export function changingJson(run: RunRecord): string {
  return JSON.stringify({
    status: run.status,
    attempt: run.attempt,
    result: run.result,
    error: run.error,
    pause: run.pause,
    lease: run.lease,
    fence: run.fence,
    cancelRequested: run.cancelRequested,
    reclaims: run.reclaims,
    lastSeq: run.lastSeq,
    startedAt: run.startedAt,
    finishedAt: run.finishedAt,
    availableAt: run.availableAt,
  });
}

/** The fields of a record that never change after it is created, as the JSON stored in `fix`. */
export function fixedJson(run: RunRecord): string {
  return JSON.stringify({
    id: run.id,
    queue: run.queue,
    handlers: run.handlers,
    input: run.input,
    maxAttempts: run.maxAttempts,
    retry: run.retry,
    userId: run.userId,
    traceId: run.traceId,
    idempotencyKey: run.idempotencyKey,
    priority: run.priority,
    timeoutSeconds: run.timeoutSeconds,
    maxReclaims: run.maxReclaims,
    context: run.context,
    createdAt: run.createdAt,
  });
}

/**
 * The record stored as `fix` + `doc` (or, written before the split, as `doc` alone), with the
 * claim the claim script recorded beside it (`claim`, `{w, at, exp}`) applied as `claimRun`
 * applies it; `null` without a doc.
 */
export function parseRecord(fix: unknown, doc: unknown, claim: unknown): RunRecord | null {
  if (typeof doc !== "string") return null;
  const changing = JSON.parse(doc) as RunRecord;
  const run =
    typeof fix === "string" && fix !== "" ? join(JSON.parse(fix) as RunRecord, changing) : changing;
  if (typeof claim !== "string" || claim === "") return run;
  const c = JSON.parse(claim) as { w: string; at: number; exp: number };
  return claimRun(run, c.w, c.exp - c.at, c.at).run;
}

/** One record of the two halves, built as one literal so every record has the same shape. */
function join(f: RunRecord, c: RunRecord): RunRecord {
  return {
    id: f.id,
    queue: f.queue,
    handlers: f.handlers,
    input: f.input,
    status: c.status,
    attempt: c.attempt,
    maxAttempts: f.maxAttempts,
    retry: f.retry,
    result: c.result,
    error: c.error,
    pause: c.pause,
    lease: c.lease,
    fence: c.fence,
    cancelRequested: c.cancelRequested,
    userId: f.userId,
    traceId: f.traceId,
    idempotencyKey: f.idempotencyKey,
    priority: f.priority,
    timeoutSeconds: f.timeoutSeconds,
    reclaims: c.reclaims,
    maxReclaims: f.maxReclaims,
    lastSeq: c.lastSeq,
    context: f.context,
    createdAt: f.createdAt,
    startedAt: c.startedAt,
    finishedAt: c.finishedAt,
    availableAt: c.availableAt,
  };
}
