import type { Redis } from "ioredis";
import { ErrorCode, NervaError } from "../../errors.js";
import type { RunListQuery } from "../store.js";
import { claimRun, type Transition } from "../transitions.js";
import { RunStatus, type RunEvent, type RunPage, type RunRecord } from "../types.js";
import { listRuns } from "./list.js";
import { changingJson, fixedJson, parseRecord } from "./record-fields.js";
import {
  CLAIM_LUA,
  COMMIT_CLAIM_LUA,
  COMMIT_LUA,
  PRUNE_LUA,
  READ_EVENTS_LUA,
  redisKey,
} from "./scripts.js";
import { toUnavailable } from "./unavailable.js";

/** A record as read, with its version (for compare-and-set). */
export interface Loaded {
  readonly run: RunRecord;
  readonly v: number;
}

/** What a claim reads of a run in one round trip; `run` is `null` when there is no record. */
export interface ClaimRead {
  readonly run: RunRecord | null;
  readonly v: number;
  readonly steps: Map<string, string>;
  readonly inputs: Map<string, string>;
  readonly checkpoint: string | null;
}

/** The write a commit makes beside the record: none, a step, an answer, a checkpoint, or a create. */
export type Op =
  | { kind: "" }
  | { kind: "step" | "input" | "checkpoint"; key: string; value: string }
  | { kind: "create"; idem: string | null };

/**
 * What the claim script answers (see CLAIM_LUA): a run it claimed; a candidate for the caller to
 * read and decide (`check`: a lapsed lease, or a record the script leaves to the slow path); or
 * nothing due, with the earliest time something will be (`next`, epoch ms) when known.
 */
export type ClaimAnswer =
  | ({ readonly kind: "claimed" } & FastClaim)
  | { readonly kind: "check"; readonly runId: string }
  | { readonly kind: "none"; readonly next: number | null };

/** A run the claim script claimed. */
export interface FastClaim {
  readonly run: RunRecord;
  readonly v: number;
  readonly steps: Map<string, string>;
  readonly inputs: Map<string, string>;
  readonly checkpoint: string | null;
}

/** A claim made by the same call as a commit: for `workerId`, leased `leaseMs` from `now`. */
export interface NextClaim {
  readonly queue: string;
  readonly workerId: string;
  readonly leaseMs: number;
  readonly now: number;
}

/** The commit script's answer (see COMMIT_LUA), with the claim's when one was made. */
export type CommitAnswer = [number, string | number | undefined, ClaimAnswer?];

const MAX_CAS_TRIES = 50;

/** The claim script's raw answer, read (see CLAIM_LUA). */
function claimAnswer(
  answer: unknown[],
  workerId: string,
  leaseMs: number,
  now: number,
): ClaimAnswer {
  if (answer[0] === 0) {
    return { kind: "none", next: answer[1] === "" ? null : Number(answer[1]) };
  }
  if (answer[0] === 2) return { kind: "check", runId: String(answer[1]) };
  const stored = parseRecord(answer[4], answer[3], null)!;
  return {
    kind: "claimed",
    run: claimRun(stored, workerId, leaseMs, now).run,
    v: Number(answer[2]),
    steps: pairs(answer[5]),
    inputs: pairs(answer[6]),
    checkpoint: typeof answer[7] === "string" ? answer[7] : null,
  };
}

/** A flat [k1, v1, k2, v2...] answer as a Map. */
function pairs(flat: unknown): Map<string, string> {
  const map = new Map<string, string>();
  if (!Array.isArray(flat)) return map;
  for (let i = 0; i + 1 < flat.length; i += 2) map.set(String(flat[i]), String(flat[i + 1]));
  return map;
}

/**
 * The run records of a RedisRunStore: reads them (as JSON under `<prefix>:run:<id>`) and writes
 * them only through the compare-and-set commit script (scripts.ts), whose arguments encode the
 * record, its index scores, the extra write and the new events.
 */
export class RedisRecords {
  /** The command connection (the store's own; pub/sub and the claims' blocking wait use duplicates of it). */
  readonly redis: Redis;
  readonly prefix: string;

  constructor(redis: Redis, prefix: string) {
    this.redis = redis;
    this.prefix = prefix;
    redis.defineCommand("nervaCommit", { numberOfKeys: 1, lua: COMMIT_LUA });
    redis.defineCommand("nervaClaim", { numberOfKeys: 0, lua: CLAIM_LUA });
    redis.defineCommand("nervaCommitClaim", { numberOfKeys: 1, lua: COMMIT_CLAIM_LUA });
    redis.defineCommand("nervaPrune", { numberOfKeys: 0, lua: PRUNE_LUA });
    redis.defineCommand("nervaReadEvents", { numberOfKeys: 2, lua: READ_EVENTS_LUA });
  }

  key(...parts: string[]): string {
    return redisKey(this.prefix, ...parts);
  }

  async load(runId: string): Promise<Loaded | null> {
    const [fix, doc, v, claim] = (await this.redis
      .hmget(this.key("run", runId), "fix", "doc", "v", "claim")
      .catch((e: unknown) => {
        throw toUnavailable(e);
      })) as (string | null)[];
    const run = parseRecord(fix, doc, claim);
    if (run === null || v === null || v === undefined) return null;
    return { run, v: Number(v) };
  }

  /**
   * Runs the commit script; its raw answer. The fields that never change go only with a create,
   * or again when the record turns out to be written before the split (answer 4).
   */
  async commit(
    run: RunRecord,
    expected: number | null,
    events: Transition["events"],
    op: Op,
    claim?: NextClaim,
  ): Promise<CommitAnswer> {
    const answer = await this.#commit(run, expected, events, op, expected === null, claim);
    if (answer[0] !== 4) return answer;
    return this.#commit(run, expected, events, op, true, claim);
  }

  async #commit(
    run: RunRecord,
    expected: number | null,
    events: Transition["events"],
    op: Op,
    withFixed: boolean,
    claim: NextClaim | undefined,
  ): Promise<CommitAnswer> {
    const args: (string | number)[] = [
      this.prefix,
      run.id,
      run.queue,
      expected === null ? "" : String(expected),
      changingJson(run),
      run.status,
      run.lastSeq,
      run.createdAt,
      run.status === RunStatus.PENDING ? run.availableAt : "",
      run.status === RunStatus.RUNNING && run.lease !== null ? run.lease.expiresAt : "",
      run.finishedAt ?? "",
      run.priority,
      op.kind === "create" ? "" : op.kind,
      op.kind === "" || op.kind === "create" ? "" : op.key,
      op.kind === "" || op.kind === "create" ? "" : op.value,
      op.kind === "create" && op.idem !== null ? this.key("idem", run.queue, op.idem) : "",
      run.fence,
      run.attempt,
      run.availableAt,
      withFixed ? fixedJson(run) : "",
      events.length,
    ];
    for (const e of events) {
      args.push(
        e.seq,
        JSON.stringify({ type: e.type, at: e.at, attempt: e.attempt, data: e.data }),
      );
    }
    try {
      const key = this.key("run", run.id);
      if (claim === undefined) {
        const commit = (
          this.redis as unknown as {
            nervaCommit: (...a: unknown[]) => Promise<[number, string | number]>;
          }
        ).nervaCommit;
        return await commit.call(this.redis, key, ...args);
      }
      const commitClaim = (
        this.redis as unknown as {
          nervaCommitClaim: (...a: unknown[]) => Promise<[number, string | number, unknown[]?]>;
        }
      ).nervaCommitClaim;
      const [code, value, claimed] = await commitClaim.call(
        this.redis,
        key,
        ...this.#claimArgs(claim),
        ...args,
      );
      return claimed === undefined
        ? [code, value]
        : [code, value, claimAnswer(claimed, claim.workerId, claim.leaseMs, claim.now)];
    } catch (err) {
      throw toUnavailable(err);
    }
  }

  #claimArgs(claim: NextClaim): (string | number)[] {
    return [
      this.prefix,
      claim.queue,
      claim.now,
      JSON.stringify(claim.workerId),
      claim.now + claim.leaseMs,
    ];
  }

  /**
   * Applies `apply` to the record and writes it if nobody changed the record meanwhile; re-reads
   * and re-applies on a conflict (`apply` throws LEASE_LOST, INVALID_STATE... when the fresh
   * record no longer allows it).
   */
  async mutate(
    runId: string,
    apply: (run: RunRecord) => Transition,
    options: {
      op?: Op | (() => Op);
      held?: { run: RunRecord; v: number };
      missing: () => NervaError;
      /** A claim to make in the same call once the write is made (see COMMIT_CLAIM_LUA). */
      claim?: NextClaim;
    },
  ): Promise<{ t: Transition; v: number; existing?: string; claimed?: ClaimAnswer }> {
    let current: { run: RunRecord; v: number } | null = options.held ?? null;
    for (let i = 0; i < MAX_CAS_TRIES; i++) {
      current ??= await this.load(runId);
      if (current === null) throw options.missing();
      const t = apply(current.run);
      if (t.events.length === 0 && t.run === current.run) return { t, v: current.v };
      const op = typeof options.op === "function" ? options.op() : (options.op ?? { kind: "" });
      const [code, value, claimed] = await this.commit(
        t.run,
        current.v,
        t.events,
        op,
        options.claim,
      );
      if (code === 1)
        return claimed === undefined ? { t, v: Number(value) } : { t, v: Number(value), claimed };
      if (code === 2) return { t, v: current.v, existing: String(value) };
      if (code === -1) throw options.missing();
      current = null;
    }
    throw new NervaError(
      ErrorCode.UNAVAILABLE,
      `Run ${runId} changed ${MAX_CAS_TRIES} times while being written; retry.`,
      {
        details: { retryAfterSeconds: 1 },
      },
    );
  }

  /**
   * Runs the claim script for `queue` (see CLAIM_LUA): the run it claimed for `workerId` (as
   * `claimRun` makes it) with its steps, answers and checkpoint, a candidate to decide, or none.
   */
  async claimNext(
    queue: string,
    workerId: string,
    leaseMs: number,
    now: number,
  ): Promise<ClaimAnswer> {
    const claim: NextClaim = { queue, workerId, leaseMs, now };
    try {
      const run = (this.redis as unknown as { nervaClaim: (...a: unknown[]) => Promise<unknown[]> })
        .nervaClaim;
      return claimAnswer(
        await run.call(this.redis, ...this.#claimArgs(claim)),
        workerId,
        leaseMs,
        now,
      );
    } catch (err) {
      throw toUnavailable(err);
    }
  }

  /**
   * Puts run `runId`'s entries in the claim indexes of `queue` right by its record (`null`: the
   * run is gone): a pending run sits in its queue at its due time, a running one in act at its
   * lease expiry, any other in neither. Only for an entry the claim script found wrong.
   */
  async reindex(runId: string, queue: string, run: RunRecord | null): Promise<void> {
    const pend = this.key("pend", queue);
    const pdl = this.key("pdl", queue);
    const prq = this.key("prq", queue);
    const act = this.key("act", queue);
    const pipeline = this.redis.pipeline();
    if (run?.status === RunStatus.PENDING) {
      pipeline.zrem(act, runId);
      if (run.priority === 0) pipeline.zadd(pend, run.availableAt, runId);
      else pipeline.zrem(pend, runId).zrem(prq, runId).zadd(pdl, run.availableAt, runId);
    } else {
      pipeline.zrem(pend, runId).zrem(pdl, runId).zrem(prq, runId);
      if (run?.status === RunStatus.RUNNING && run.lease !== null) {
        pipeline.zadd(act, run.lease.expiresAt, runId);
      } else pipeline.zrem(act, runId);
    }
    await pipeline.exec().catch((e: unknown) => {
      throw toUnavailable(e);
    });
  }

  /** The record, version, steps, answers and checkpoint a claim needs, in one round trip. */
  async readForClaim(runId: string): Promise<ClaimRead> {
    const rk = this.key("run", runId);
    const answers = ((await this.redis
      .pipeline([
        ["hmget", rk, "fix", "doc", "v", "claim"],
        ["hgetall", this.key("steps", runId)],
        ["hgetall", this.key("in", runId)],
        ["get", this.key("cp", runId)],
      ])
      .exec()
      .catch((e: unknown) => {
        throw toUnavailable(e);
      })) ?? []) as [unknown, unknown][];
    const [fields, steps, inputs, checkpoint] = answers.map((a) => a[1]);
    const [fix, doc, v, claim] = (fields as unknown[] | undefined) ?? [];
    return {
      run: parseRecord(fix, doc, claim),
      v: Number(v),
      steps: new Map(Object.entries((steps as Record<string, string> | null) ?? {})),
      inputs: new Map(Object.entries((inputs as Record<string, string> | null) ?? {})),
      checkpoint: typeof checkpoint === "string" ? checkpoint : null,
    };
  }

  list(query: RunListQuery): Promise<RunPage> {
    return listRuns(this.redis, (...parts) => this.key(...parts), query);
  }

  async prune(queue: string, finishedBeforeAt: number): Promise<number> {
    let total = 0;
    const prune = (this.redis as unknown as { nervaPrune: (...a: unknown[]) => Promise<number> })
      .nervaPrune;
    for (;;) {
      const n = await prune
        .call(this.redis, this.prefix, queue, finishedBeforeAt, 200)
        .catch((e: unknown) => {
          throw toUnavailable(e);
        });
      total += n;
      if (n < 200) return total;
    }
  }

  async readEvents(runId: string, afterSeq: number, limit: number): Promise<RunEvent[]> {
    const read = (
      this.redis as unknown as { nervaReadEvents: (...a: unknown[]) => Promise<string[]> }
    ).nervaReadEvents;
    const entries = await read
      .call(this.redis, this.key("run", runId), this.key("ev", runId), afterSeq, limit)
      .catch((e: unknown) => {
        throw toUnavailable(e);
      });
    return entries.map((json, i) => {
      const e = JSON.parse(json) as Omit<RunEvent, "runId" | "seq">;
      return {
        runId,
        seq: afterSeq + 1 + i,
        type: e.type,
        at: e.at,
        attempt: e.attempt,
        data: e.data,
      };
    });
  }
}
