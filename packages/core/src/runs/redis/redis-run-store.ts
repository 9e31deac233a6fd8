// The RunStore on Redis. This file holds the RunStore methods and the leases this process holds;
// each seam has a file of its own: options.ts (options, opening the connection), records.ts
// (reading records, compare-and-set writes), scripts.ts (the Lua and the key layout),
// delivery.ts (claims and the wait for a run), claim.ts (the read-and-write path of a claim),
// tails.ts (pub/sub: event waiters, cancel watchers), unavailable.ts (connection errors).
import type { Redis } from "ioredis";
import type { z } from "zod";
import { ErrorCode, NervaError, parseOrThrow } from "../../errors.js";
import type { JsonValue } from "../../types/agent.js";
import type {
  ClaimRequest,
  ClaimedRun,
  LeaseRef,
  NewRun,
  RunListQuery,
  PendingOutcome,
  RunOutcome,
  RunStore,
} from "../store.js";
import {
  appendEvent,
  cancelRun,
  checkFence,
  createRun,
  closedStore,
  finishPendingRun,
  finishRun,
  heartbeatRun,
  leaseLost,
  pauseRun,
  redriveRun,
  releaseRun,
  resumeKey,
  resumeRun,
  retryRun,
  runNotFound,
  type Transition,
} from "../transitions.js";
import {
  RunEventType,
  RunStatus,
  type RunError,
  type RunEvent,
  type RunPage,
  type RunPause,
  type RunRecord,
} from "../types.js";
import { takeAnswer, type Held } from "./claim.js";
import { coalesceWrites } from "./coalesce.js";
import { RedisDelivery } from "./delivery.js";
import { RedisRunStoreOptionsSchema, openRedis, type RedisRunStoreOptions } from "./options.js";
import { RedisRecords, type ClaimAnswer, type NextClaim, type Op } from "./records.js";
import { RedisTails } from "./tails.js";

export { RedisRunStoreOptionsSchema, type RedisRunStoreOptions } from "./options.js";

/**
 * A {@link RunStore} on Redis. Records (each with its run's events), steps, answers and
 * checkpoints live under `prefix`, written by a compare-and-set Lua script, so a worker whose
 * lease was taken over cannot write; the same script keeps the queue (due runs by priority and
 * due time, delayed ones until due, running ones by lease expiry), so a claim is one script and a
 * dead worker's runs are reclaimed when their lease lapses. Needs the optional package `ioredis`.
 *
 * The server must keep what it is given: `maxmemory-policy noeviction` and AOF persistence
 * (see docs/scaling-out.md).
 *
 * @example
 * const store = new RedisRunStore({ url: "redis://127.0.0.1:6379", prefix: "myapp" });
 * const queue = new RunQueue({ store, name: "default" });
 */
export class RedisRunStore implements RunStore {
  readonly prefix: string;
  /** A claim is one script: a Runner overlaps as many as it has slots. */
  readonly claimConcurrency = Infinity;
  readonly #options: z.output<typeof RedisRunStoreOptionsSchema>;
  readonly #redis: Redis;
  readonly #records: RedisRecords;
  readonly #delivery: RedisDelivery;
  readonly #tails: RedisTails;
  readonly #held = new Map<string, Held>();
  #closed = false;

  constructor(options: RedisRunStoreOptions = {}) {
    this.#options = parseOrThrow(
      RedisRunStoreOptionsSchema,
      options,
      ErrorCode.INVALID_OPTIONS,
      "options",
      'Pass { url?: "redis://127.0.0.1:6379", connection?: ioredis options, prefix?: string }.',
    );
    this.prefix = this.#options.prefix;
    this.#redis = openRedis(this.#options);
    coalesceWrites(this.#redis);
    const closed = (): boolean => this.#closed;
    this.#records = new RedisRecords(this.#redis, this.prefix);
    this.#delivery = new RedisDelivery(this.#records, closed);
    this.#tails = new RedisTails(this.#records, closed);
  }

  // ---- producer side ---------------------------------------------------------------------

  async create(init: NewRun): Promise<{ run: RunRecord; created: boolean }> {
    const t = createRun(init, Date.now());
    // One script writes the record and puts the run in its queue (a paused one in none).
    const [code, value] = await this.#records.commit(t.run, null, t.events, {
      kind: "create",
      idem: init.idempotencyKey,
    });
    if (code === 3) {
      const other = await this.#records.load(String(value));
      if (other !== null) return { run: other.run, created: false };
      return this.create(init);
    }
    if (code !== 1) throw new NervaError(ErrorCode.INTERNAL, `Run id ${init.id} already exists.`);
    return { run: t.run, created: true };
  }

  async get(runId: string): Promise<RunRecord | null> {
    return (await this.#records.load(runId))?.run ?? null;
  }

  list(query: RunListQuery): Promise<RunPage> {
    return this.#records.list(query);
  }

  async cancel(runId: string, reason: string | null): Promise<RunRecord> {
    const before = await this.#records.load(runId);
    const { t } = await this.#records.mutate(runId, (run) => cancelRun(run, reason, Date.now()), {
      missing: () => runNotFound(runId),
      ...(before === null ? {} : { held: { run: before.run, v: before.v } }),
    });
    if (t.run.cancelRequested) await this.#tails.publishCancel(runId);
    return t.run;
  }

  async resume(runId: string, key: string | null, value: string): Promise<RunRecord> {
    let answered = "";
    const { t } = await this.#records.mutate(
      runId,
      (run) => {
        answered = resumeKey(run, key);
        return resumeRun(run, answered, Date.now());
      },
      {
        missing: () => runNotFound(runId),
        op: () => ({ kind: "input", key: answered, value }),
      },
    );
    return t.run;
  }

  async finishPending(
    runId: string,
    outcome: PendingOutcome,
  ): Promise<{ run: RunRecord; answers: ReadonlyMap<string, string> }> {
    let answers: ReadonlyMap<string, string> = new Map();
    // The record and its answers are read together; the write is a compare-and-set on the
    // version read, so of concurrent callers one ends the run and the others read it again
    // and find it no longer pending.
    for (let i = 0; i < 20; i++) {
      const read = await this.#records.readForClaim(runId);
      if (read.run === null) throw runNotFound(runId);
      answers = read.inputs;
      const { run, v } = read;
      const t = finishPendingRun(run, () => outcome(answers, run), Date.now());
      if (t.events.length === 0) return { run, answers };
      const [code] = await this.#records.commit(t.run, v, t.events, { kind: "" });
      if (code === 1) return { run: t.run, answers };
      if (code === -1) throw runNotFound(runId);
    }
    throw new NervaError(
      ErrorCode.UNAVAILABLE,
      `Run ${runId} kept changing while being finished; retry.`,
      {
        details: { retryAfterSeconds: 1 },
      },
    );
  }

  async redrive(runId: string): Promise<RunRecord> {
    const { t } = await this.#records.mutate(runId, (run) => redriveRun(run, Date.now()), {
      missing: () => runNotFound(runId),
    });
    return t.run;
  }

  prune(queue: string, finishedBeforeAt: number): Promise<number> {
    return this.#records.prune(queue, finishedBeforeAt);
  }

  readEvents(runId: string, afterSeq: number, limit: number): Promise<RunEvent[]> {
    return this.#records.readEvents(runId, afterSeq, limit);
  }

  waitForEvents(
    runId: string,
    afterSeq: number,
    options: { signal?: AbortSignal; timeoutSeconds?: number },
  ): Promise<void> {
    return this.#tails.waitForEvents(runId, afterSeq, options);
  }

  waitForStatusChange(
    runId: string,
    status: RunStatus,
    options: { signal?: AbortSignal; timeoutSeconds?: number; until?: readonly RunStatus[] },
  ): Promise<void> {
    return this.#tails.waitForStatusChange(runId, status, options);
  }

  watchCancel(runId: string, listener: () => void): () => void {
    return this.#tails.watchCancel(runId, listener);
  }

  // ---- worker side -----------------------------------------------------------------------

  async claim(request: ClaimRequest): Promise<ClaimedRun | null> {
    if (this.#closed) throw closedStore();
    const taken = await this.#delivery.claim(request);
    if (taken === null) return null;
    this.#held.set(taken.claimed.lease.runId, taken.held);
    return taken.claimed;
  }

  #holder(lease: LeaseRef): Held {
    const held = this.#held.get(lease.runId);
    if (held === undefined || held.run.fence !== lease.fence) throw leaseLost(lease, null);
    return held;
  }

  /** A fenced write of the holder of `lease`; keeps the held record current. */
  async #leased(
    lease: LeaseRef,
    apply: (run: RunRecord) => Transition,
    op?: Op,
    claim?: NextClaim,
  ): Promise<{ t: Transition; existing?: string; claimed?: ClaimAnswer }> {
    const held = this.#holder(lease);
    const result = await this.#records.mutate(lease.runId, apply, {
      held,
      missing: () => leaseLost(lease, null),
      ...(op === undefined ? {} : { op }),
      ...(claim === undefined ? {} : { claim }),
    });
    // A step committed before wrote nothing: the held record stays as it is (no seq used).
    if (result.existing === undefined) held.run = result.t.run;
    held.v = result.v;
    return result;
  }

  async heartbeat(lease: LeaseRef, leaseSeconds: number): Promise<{ cancelRequested: boolean }> {
    const leaseMs = Math.round(leaseSeconds * 1000);
    const { t } = await this.#leased(lease, (run) => ({
      run: heartbeatRun(run, lease, leaseMs, Date.now()),
      events: [],
    }));
    return { cancelRequested: t.run.cancelRequested };
  }

  async append(lease: LeaseRef, type: string, data: Record<string, JsonValue>): Promise<RunEvent> {
    const { t } = await this.#leased(lease, (run) =>
      appendEvent(run, lease, type, data, Date.now()),
    );
    return { runId: lease.runId, ...t.events[t.events.length - 1]! };
  }

  async commitStep(lease: LeaseRef, key: string, value: string): Promise<string> {
    const result = await this.#leased(
      lease,
      (run) =>
        appendEvent(
          checkFence(run, lease),
          lease,
          RunEventType.STEP_COMPLETED,
          { key },
          Date.now(),
        ),
      { kind: "step", key, value },
    );
    return result.existing ?? value;
  }

  async checkpoint(lease: LeaseRef, state: string): Promise<void> {
    await this.#leased(
      lease,
      (run) =>
        appendEvent(
          run,
          lease,
          RunEventType.CHECKPOINT,
          { bytes: Buffer.byteLength(state) },
          Date.now(),
        ),
      { kind: "checkpoint", key: "", value: state },
    );
  }

  pause(lease: LeaseRef, pause: RunPause): Promise<RunRecord> {
    return this.#end(lease, (run) => pauseRun(run, lease, pause, Date.now()));
  }

  finish(lease: LeaseRef, outcome: RunOutcome): Promise<RunRecord> {
    return this.#end(lease, (run) => finishRun(run, lease, outcome, Date.now()));
  }

  /** The finish and the claim of `next` in one script (COMMIT_CLAIM_LUA): one round trip. */
  async finishAndClaim(
    lease: LeaseRef,
    outcome: RunOutcome,
    next: ClaimRequest,
  ): Promise<{ run: RunRecord; next: ClaimedRun | null }> {
    if (this.#closed) throw closedStore();
    const leaseMs = Math.round(next.leaseSeconds * 1000);
    const claim = { queue: next.queue, workerId: next.workerId, leaseMs, now: Date.now() };
    const { t, claimed } = await this.#leased(
      lease,
      (run) => finishRun(run, lease, outcome, Date.now()),
      undefined,
      claim,
    );
    this.#held.delete(lease.runId);
    const taken =
      claimed === undefined ? null : await takeAnswer(this.#records, claimed, next, leaseMs);
    if (taken !== null) this.#held.set(taken.claimed.lease.runId, taken.held);
    return { run: t.run, next: taken?.claimed ?? null };
  }

  retry(lease: LeaseRef, delaySeconds: number, error: RunError): Promise<RunRecord> {
    const delayMs = Math.round(delaySeconds * 1000);
    return this.#end(lease, (run) => retryRun(run, lease, delayMs, error, Date.now()));
  }

  release(lease: LeaseRef): Promise<RunRecord> {
    return this.#end(lease, (run) => releaseRun(run, lease, Date.now()));
  }

  /** A write that ends this worker's hold; the same script puts the run back in its queue or not. */
  async #end(lease: LeaseRef, apply: (run: RunRecord) => Transition): Promise<RunRecord> {
    const { t } = await this.#leased(lease, apply);
    this.#held.delete(lease.runId);
    return t.run;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#delivery.close();
    this.#tails.wakeAll();
    this.#tails.close();
    await this.#redis.quit().catch(() => this.#redis.disconnect());
  }
}
