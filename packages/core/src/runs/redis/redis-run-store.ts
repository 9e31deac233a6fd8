import { randomBytes } from "node:crypto";
import type { Job, Queue, Worker } from "bullmq";
import type { Redis, RedisOptions } from "ioredis";
import { z } from "zod";
import { ErrorCode, NervaError, isNervaError, parseOrThrow } from "../../errors.js";
import { requireOptional } from "../../internal/optional-dependency.js";
import type { JsonValue } from "../../types/agent.js";
import { decodeCursor, encodeCursor, matchesQuery } from "../list-cursor.js";
import type {
  ClaimRequest,
  ClaimedRun,
  LeaseRef,
  NewRun,
  RunListQuery,
  RunOutcome,
  RunStore,
} from "../store.js";
import {
  appendEvent,
  cancelRun,
  checkFence,
  claimRun,
  createRun,
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
  isFinalStatus,
  type RunError,
  type RunEvent,
  type RunPage,
  type RunPause,
  type RunRecord,
} from "../types.js";
import { Wakeups } from "../wakeups.js";
import { COMMIT_LUA, PRUNE_LUA } from "./scripts.js";

export const RedisRunStoreOptionsSchema = z
  .object({
    /** `redis://host:port/db`; ignored when `connection` is given. */
    url: z.string().min(1).default("redis://127.0.0.1:6379"),
    /** ioredis options (host, port, password, tls, ...), instead of `url`. */
    connection: z.record(z.string(), z.unknown()).optional(),
    /** Prefix of every key this store writes (BullMQ's keys go under `<prefix>:bull`). */
    prefix: z
      .string()
      .regex(/^[A-Za-z0-9_.:-]{1,64}$/, "must be 1-64 letters, digits, '_', '.', ':' or '-'")
      .default("nerva"),
    /**
     * How long a BullMQ job may wait for its run record before it is dropped as an orphan
     * (an enqueue that died between its two writes).
     */
    orphanSeconds: z.number().positive().max(3600).default(60),
  })
  .strict();
/** Options of {@link RedisRunStore}. */
export type RedisRunStoreOptions = z.input<typeof RedisRunStoreOptionsSchema>;

type IORedisCtor = new (...args: unknown[]) => Redis;
interface BullModule {
  Queue: new (name: string, opts: Record<string, unknown>) => Queue;
  Worker: new (name: string, processor: null, opts: Record<string, unknown>) => Worker;
}

/** What this process holds of a run it claimed: the record as written, and the BullMQ job. */
interface Held {
  run: RunRecord;
  v: number;
  readonly job: Job;
  readonly token: string;
}

interface Loaded {
  readonly run: RunRecord;
  readonly v: number;
  readonly job: string | null;
}

type Op =
  | { kind: "" }
  | { kind: "step" | "input" | "checkpoint"; key: string; value: string }
  | { kind: "create"; idem: string | null };

const MAX_CAS_TRIES = 50;
const unavailableCodes =
  /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|Connection is closed|MaxRetriesPerRequest|Stream isn't writeable/;

function toUnavailable(err: unknown): unknown {
  if (isNervaError(err)) return err;
  const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  if (unavailableCodes.test(message)) {
    return new NervaError(
      ErrorCode.UNAVAILABLE,
      `Redis is unreachable (${message}). The run store retries; check the server and the connection options.`,
      { cause: err, details: { retryAfterSeconds: 1 } },
    );
  }
  return err;
}

function jobIdFor(runId: string): string {
  return `${runId}.${randomBytes(4).toString("hex")}`;
}

/**
 * A {@link RunStore} on Redis with BullMQ 6 delivering the runs (its delayed set holds backoffs
 * and `delaySeconds`, its priorities order claims, its job lock is the lease and its stalled
 * checker hands a dead worker's runs to another). Records, steps, answers, checkpoints and a
 * per-run event stream live under `prefix`, written by a compare-and-set Lua script, so a worker
 * whose lease was taken over cannot write. Needs the optional packages `bullmq` and `ioredis`.
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
  readonly #options: z.output<typeof RedisRunStoreOptionsSchema>;
  readonly #bull: BullModule;
  readonly #redis: Redis;
  readonly #sub: Redis;
  readonly #queues = new Map<string, Queue>();
  readonly #workers = new Map<string, Promise<Worker>>();
  readonly #held = new Map<string, Held>();
  readonly #events = new Wakeups();
  readonly #subscribed = new Map<string, number>();
  readonly #cancelWatchers = new Map<string, Set<() => void>>();
  readonly #sweepers: ReturnType<typeof setInterval>[] = [];
  readonly #bullConnections: Redis[] = [];
  /** Jobs BullMQ handed over with a finished one (fetch-next), locked, for the next claims. */
  readonly #prefetched = new Map<string, { job: Job; token: string }[]>();
  /** One getNextJob at a time per store: BullMQ blocks only one caller while the queue is empty. */
  #fetching: Promise<unknown> = Promise.resolve();
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
    const IORedis = requireOptional<{ default?: IORedisCtor } & IORedisCtor>(
      "ioredis",
      "RedisRunStore",
      "ioredis@^5 bullmq@^6",
    );
    this.#bull = requireOptional<BullModule>("bullmq", "RedisRunStore", "bullmq@^6 ioredis@^5");
    const Ctor = (IORedis.default ?? IORedis) as IORedisCtor;
    const base: RedisOptions = { maxRetriesPerRequest: 3, lazyConnect: false };
    this.#redis =
      this.#options.connection === undefined
        ? new Ctor(this.#options.url, base)
        : new Ctor({ ...base, ...this.#options.connection });
    this.#redis.on("error", () => undefined);
    this.#redis.defineCommand("nervaCommit", { numberOfKeys: 1, lua: COMMIT_LUA });
    this.#redis.defineCommand("nervaPrune", { numberOfKeys: 0, lua: PRUNE_LUA });
    this.#sub = this.#redis.duplicate();
    this.#sub.on("error", () => undefined);
    this.#sub.on("message", (channel: string, message: string) =>
      this.#onMessage(channel, message),
    );
    void this.#sub.subscribe(this.#key("cancel")).catch(() => undefined);
  }

  // ---- keys and connections -------------------------------------------------------------

  #key(...parts: string[]): string {
    return [this.prefix, ...parts].join(":");
  }

  /**
   * A connection of its own for a BullMQ queue or worker. BullMQ never closes a connection it was
   * given, so close() does: a store left with one open would keep its process alive.
   */
  #bullConnection(): Redis {
    const connection = this.#redis.duplicate({ maxRetriesPerRequest: null });
    this.#bullConnections.push(connection);
    return connection;
  }

  #queue(name: string): Queue {
    let queue = this.#queues.get(name);
    if (queue === undefined) {
      queue = new this.#bull.Queue(name, {
        connection: this.#bullConnection(),
        prefix: this.#key("bull"),
      });
      queue.on("error", () => undefined);
      this.#queues.set(name, queue);
    }
    return queue;
  }

  #worker(request: ClaimRequest): Promise<Worker> {
    let worker = this.#workers.get(request.queue);
    if (worker === undefined) {
      const heartbeatMs = request.heartbeatMs ?? Math.max(100, Math.floor(request.leaseMs / 3));
      const w = new this.#bull.Worker(request.queue, null, {
        connection: this.#bullConnection(),
        prefix: this.#key("bull"),
        autorun: false,
        lockDuration: request.leaseMs,
        stalledInterval: heartbeatMs,
        // Nerva counts reclaims per run (maxReclaims) and fails the run itself; BullMQ must
        // never drop a stalled job on its own, or the record would stay "running".
        maxStalledCount: 1_000_000,
        drainDelay: Math.max(1, Math.min(5, Math.ceil(heartbeatMs / 1000))),
      });
      w.on("error", () => undefined);
      worker = w.waitUntilReady().then(async () => {
        void w.startStalledCheckTimer().catch(() => undefined);
        const sweep = setInterval(
          () => void this.#sweep(request.queue, request.leaseMs),
          Math.max(1_000, heartbeatMs * 4),
        );
        sweep.unref();
        this.#sweepers.push(sweep);
        return w;
      });
      this.#workers.set(request.queue, worker);
    }
    return worker;
  }

  // ---- records ------------------------------------------------------------------------------

  async #load(runId: string): Promise<Loaded | null> {
    const [doc, v, job] = (await this.#redis
      .hmget(this.#key("run", runId), "doc", "v", "job")
      .catch((e: unknown) => {
        throw toUnavailable(e);
      })) as (string | null)[];
    if (doc === null || doc === undefined || v === null || v === undefined) return null;
    return { run: JSON.parse(doc) as RunRecord, v: Number(v), job: job ?? null };
  }

  /** Runs the commit script; its raw answer. */
  async #commit(
    run: RunRecord,
    expected: number | null,
    events: Transition["events"],
    op: Op,
    job: string | null = null,
  ): Promise<[number, string | number | undefined]> {
    const args: (string | number)[] = [
      this.prefix,
      run.id,
      run.queue,
      expected === null ? "" : String(expected),
      JSON.stringify(run),
      run.status,
      run.lastSeq,
      run.createdAt,
      run.status === RunStatus.PENDING ? run.availableAt : "",
      run.status === RunStatus.RUNNING && run.lease !== null ? run.lease.expiresAt : "",
      run.finishedAt ?? "",
      job ?? "",
      op.kind === "create" ? "" : op.kind,
      op.kind === "" || op.kind === "create" ? "" : op.key,
      op.kind === "" || op.kind === "create" ? "" : op.value,
      op.kind === "create" && op.idem !== null ? this.#key("idem", run.queue, op.idem) : "",
      events.length,
    ];
    for (const e of events) {
      args.push(
        e.seq,
        JSON.stringify({ type: e.type, at: e.at, attempt: e.attempt, data: e.data }),
      );
    }
    try {
      const commit = (
        this.#redis as unknown as {
          nervaCommit: (...a: unknown[]) => Promise<[number, string | number]>;
        }
      ).nervaCommit;
      return await commit.call(this.#redis, this.#key("run", run.id), ...args);
    } catch (err) {
      throw toUnavailable(err);
    }
  }

  /**
   * Applies `apply` to the record and writes it if nobody changed the record meanwhile; re-reads
   * and re-applies on a conflict (`apply` throws LEASE_LOST, INVALID_STATE... when the fresh
   * record no longer allows it).
   */
  async #mutate(
    runId: string,
    apply: (run: RunRecord) => Transition,
    options: {
      op?: Op | (() => Op);
      job?: string | null;
      held?: { run: RunRecord; v: number };
      missing: () => NervaError;
    },
  ): Promise<{ t: Transition; v: number; existing?: string }> {
    let current: { run: RunRecord; v: number } | null = options.held ?? null;
    for (let i = 0; i < MAX_CAS_TRIES; i++) {
      current ??= await this.#load(runId);
      if (current === null) throw options.missing();
      const t = apply(current.run);
      if (t.events.length === 0 && t.run === current.run) return { t, v: current.v };
      const op = typeof options.op === "function" ? options.op() : (options.op ?? { kind: "" });
      const [code, value] = await this.#commit(t.run, current.v, t.events, op, options.job ?? null);
      if (code === 1) return { t, v: Number(value) };
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

  // ---- producer side ---------------------------------------------------------------------

  async create(init: NewRun): Promise<{ run: RunRecord; created: boolean }> {
    const t = createRun(init, Date.now());
    const job = init.id;
    const [code, value] = await this.#commit(
      t.run,
      null,
      t.events,
      { kind: "create", idem: init.idempotencyKey },
      job,
    );
    if (code === 3) {
      const other = await this.#load(String(value));
      if (other !== null) return { run: other.run, created: false };
      return this.create(init);
    }
    if (code !== 1) throw new NervaError(ErrorCode.INTERNAL, `Run id ${init.id} already exists.`);
    // The record is the truth; a job lost here (crash) is re-added by the sweep.
    await this.#addJob(t.run, job);
    return { run: t.run, created: true };
  }

  async #addJob(run: RunRecord, jobId: string): Promise<void> {
    const delay = Math.max(0, run.availableAt - Date.now());
    try {
      await this.#queue(run.queue).add(
        "run",
        { runId: run.id },
        {
          jobId,
          ...(delay > 0 ? { delay } : {}),
          ...(run.priority > 0 ? { priority: run.priority } : {}),
          removeOnComplete: true,
          removeOnFail: true,
        },
      );
    } catch (err) {
      throw toUnavailable(err);
    }
  }

  async get(runId: string): Promise<RunRecord | null> {
    return (await this.#load(runId))?.run ?? null;
  }

  async list(query: RunListQuery): Promise<RunPage> {
    const after = decodeCursor(query.cursor ?? null);
    const index =
      query.status === undefined
        ? this.#key("list", query.queue)
        : this.#key("st", query.queue, query.status);
    const runs: RunRecord[] = [];
    const max = after === null ? "+inf" : String(after.createdAt);
    let offset = 0;
    for (;;) {
      const page = await this.#redis
        .zrevrangebyscore(index, max, "-inf", "LIMIT", offset, 200)
        .catch((e: unknown) => {
          throw toUnavailable(e);
        });
      if (page.length === 0) break;
      offset += page.length;
      const docs = await this.#redis
        .pipeline(page.map((id) => ["hget", this.#key("run", id), "doc"]))
        .exec();
      for (const [, doc] of docs ?? []) {
        if (typeof doc !== "string") continue;
        const run = JSON.parse(doc) as RunRecord;
        if (matchesQuery(run, query, after)) runs.push(run);
      }
      if (runs.length > query.limit) break;
      if (page.length < 200) break;
    }
    const out = runs.slice(0, query.limit);
    const last = out[out.length - 1];
    return {
      runs: out,
      nextCursor: runs.length > query.limit && last !== undefined ? encodeCursor(last) : null,
    };
  }

  async cancel(runId: string, reason: string | null): Promise<RunRecord> {
    const before = await this.#load(runId);
    const { t } = await this.#mutate(runId, (run) => cancelRun(run, reason, Date.now()), {
      missing: () => runNotFound(runId),
      ...(before === null ? {} : { held: { run: before.run, v: before.v } }),
    });
    if (t.run.cancelRequested)
      await this.#redis.publish(this.#key("cancel"), runId).catch(() => undefined);
    if (t.run.status === RunStatus.CANCELLED && before?.job) {
      // Best effort: a job left behind is dropped when claimed (its run is final).
      await this.#queue(t.run.queue)
        .remove(before.job)
        .catch(() => undefined);
    }
    return t.run;
  }

  async resume(runId: string, key: string | null, value: string): Promise<RunRecord> {
    const job = jobIdFor(runId);
    let answered = "";
    const { t } = await this.#mutate(
      runId,
      (run) => {
        answered = resumeKey(run, key);
        return resumeRun(run, answered, Date.now());
      },
      {
        missing: () => runNotFound(runId),
        job,
        op: () => ({ kind: "input", key: answered, value }),
      },
    );
    await this.#addJob(t.run, job);
    return t.run;
  }

  async redrive(runId: string): Promise<RunRecord> {
    const job = jobIdFor(runId);
    const { t } = await this.#mutate(runId, (run) => redriveRun(run, Date.now()), {
      missing: () => runNotFound(runId),
      job,
    });
    await this.#addJob(t.run, job);
    return t.run;
  }

  async prune(queue: string, beforeMs: number): Promise<number> {
    let total = 0;
    const prune = (this.#redis as unknown as { nervaPrune: (...a: unknown[]) => Promise<number> })
      .nervaPrune;
    for (;;) {
      const n = await prune
        .call(this.#redis, this.prefix, queue, beforeMs, 200)
        .catch((e: unknown) => {
          throw toUnavailable(e);
        });
      total += n;
      if (n < 200) return total;
    }
  }

  async readEvents(runId: string, afterSeq: number, limit: number): Promise<RunEvent[]> {
    const entries = await this.#redis
      .xrange(this.#key("ev", runId), `${afterSeq + 1}-0`, "+", "COUNT", limit)
      .catch((e: unknown) => {
        throw toUnavailable(e);
      });
    return entries.map(([id, fields]) => {
      const e = JSON.parse(fields[1] as string) as Omit<RunEvent, "runId" | "seq">;
      return {
        runId,
        seq: Number(id.split("-")[0]),
        type: e.type,
        at: e.at,
        attempt: e.attempt,
        data: e.data,
      };
    });
  }

  async waitForEvents(
    runId: string,
    afterSeq: number,
    options: { signal?: AbortSignal; timeoutMs?: number },
  ): Promise<void> {
    if (this.#closed || options.signal?.aborted === true) return;
    const channel = this.#key("ev", runId);
    await this.#subscribe(channel);
    // Park the waiter before reading: a notification that lands while the read is in flight
    // (it comes on the other connection) must not be missed.
    const done = new AbortController();
    const signal =
      options.signal === undefined ? done.signal : AbortSignal.any([options.signal, done.signal]);
    const waiting = this.#events.wait(runId, options.timeoutMs ?? Infinity, signal);
    try {
      const [seq, exists] = await Promise.all([
        this.#redis.hget(this.#key("run", runId), "seq"),
        this.#redis.exists(this.#key("run", runId)),
      ]);
      if (exists === 0 || Number(seq) > afterSeq) done.abort();
      await waiting;
    } finally {
      done.abort();
      await this.#unsubscribe(channel);
    }
  }

  watchCancel(runId: string, listener: () => void): () => void {
    let set = this.#cancelWatchers.get(runId);
    if (set === undefined) this.#cancelWatchers.set(runId, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.#cancelWatchers.delete(runId);
    };
  }

  async #subscribe(channel: string): Promise<void> {
    const n = this.#subscribed.get(channel) ?? 0;
    this.#subscribed.set(channel, n + 1);
    if (n === 0)
      await this.#sub.subscribe(channel).catch((e: unknown) => {
        throw toUnavailable(e);
      });
  }

  async #unsubscribe(channel: string): Promise<void> {
    const n = (this.#subscribed.get(channel) ?? 1) - 1;
    if (n > 0) {
      this.#subscribed.set(channel, n);
      return;
    }
    this.#subscribed.delete(channel);
    if (!this.#closed) await this.#sub.unsubscribe(channel).catch(() => undefined);
  }

  #onMessage(channel: string, message: string): void {
    if (channel === this.#key("cancel")) {
      for (const listener of [...(this.#cancelWatchers.get(message) ?? [])]) listener();
      return;
    }
    this.#events.wake(channel.slice(this.#key("ev").length + 1));
  }

  // ---- worker side -----------------------------------------------------------------------

  async claim(request: ClaimRequest): Promise<ClaimedRun | null> {
    if (this.#closed) return null;
    const worker = await this.#worker(request);
    const deadline = Date.now() + request.waitMs;
    while (!this.#closed && request.signal?.aborted !== true) {
      const ready = this.#prefetched.get(request.queue)?.shift();
      if (ready !== undefined) {
        const claimed = await this.#take(ready.job, ready.token, request);
        if (claimed !== null) return claimed;
        continue;
      }
      const token = `${request.workerId}:${randomBytes(6).toString("hex")}`;
      const next = this.#fetching.then(() =>
        request.signal?.aborted === true || this.#closed
          ? undefined
          : worker.getNextJob(token, { block: request.waitMs > 0 }).catch((e: unknown) => {
              throw toUnavailable(e);
            }),
      );
      this.#fetching = next.catch(() => undefined);
      const job = await this.#raceAbort(next, request.signal, token);
      if (job === undefined || job === null) {
        if (Date.now() >= deadline) return null;
        continue;
      }
      const claimed = await this.#take(job, token, request);
      if (claimed !== null) return claimed;
    }
    return null;
  }

  /** The job, or `undefined` when `signal` aborted first (a job that arrives later goes back). */
  async #raceAbort(
    next: Promise<Job | undefined>,
    signal: AbortSignal | undefined,
    token: string,
  ): Promise<Job | undefined> {
    if (signal === undefined) return next;
    let onAbort: () => void = () => undefined;
    const aborted = new Promise<undefined>((resolve) => {
      onAbort = () => resolve(undefined);
      signal.addEventListener("abort", onAbort, { once: true });
    });
    const winner = await Promise.race([next, aborted]);
    signal.removeEventListener("abort", onAbort);
    if (winner === undefined && signal.aborted) {
      void next.then((late) => late?.moveToWait(token)).catch(() => undefined);
    }
    return winner;
  }

  /** Turns a delivered job into a claimed run, or disposes of it and answers `null`. */
  async #take(job: Job, token: string, request: ClaimRequest): Promise<ClaimedRun | null> {
    const runId = (job.data as { runId?: string }).runId ?? "";
    const rk = this.#key("run", runId);
    const answers = ((await this.#redis
      .pipeline([
        ["hget", rk, "doc"],
        ["hget", rk, "v"],
        ["hget", rk, "job"],
        ["hgetall", this.#key("steps", runId)],
        ["hgetall", this.#key("in", runId)],
        ["get", this.#key("cp", runId)],
      ])
      .exec()
      .catch((e: unknown) => {
        throw toUnavailable(e);
      })) ?? []) as [unknown, unknown][];
    const [doc, v, current, steps, inputs, checkpoint] = answers.map((a) => a[1]);
    const drop = () => job.moveToCompleted(null, token, false).catch(() => undefined);
    if (typeof doc !== "string") {
      const age = Date.now() - job.timestamp;
      if (age > this.#options.orphanSeconds * 1000) await drop();
      else
        await job
          .moveToDelayed(Date.now() + Math.min(5_000, 100 + age), token)
          .catch(() => undefined);
      return null;
    }
    const run = JSON.parse(doc) as RunRecord;
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
    const t = claimRun(run, request.workerId, request.leaseMs, now);
    const [code, nv] = await this.#commit(t.run, Number(v), t.events, { kind: "" });
    if (code !== 1) {
      // Someone changed the record in between (a cancel, a resume): let BullMQ deliver again.
      await job.moveToDelayed(Date.now() + 10, token).catch(() => undefined);
      return null;
    }
    if (!t.claimed) {
      await drop();
      return null;
    }
    this.#held.set(runId, { run: t.run, v: Number(nv), job, token });
    return {
      run: t.run,
      lease: { runId, workerId: request.workerId, fence: t.run.fence },
      steps: new Map(Object.entries((steps as Record<string, string> | null) ?? {})),
      inputs: new Map(Object.entries((inputs as Record<string, string> | null) ?? {})),
      checkpoint: typeof checkpoint === "string" ? checkpoint : null,
    };
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
  ): Promise<{ t: Transition; existing?: string }> {
    const held = this.#holder(lease);
    const result = await this.#mutate(lease.runId, apply, {
      held,
      missing: () => leaseLost(lease, null),
      ...(op === undefined ? {} : { op }),
    });
    held.run = result.t.run;
    held.v = result.v;
    return result;
  }

  async heartbeat(lease: LeaseRef, leaseMs: number): Promise<{ cancelRequested: boolean }> {
    const held = this.#holder(lease);
    const [{ t }] = await Promise.all([
      this.#leased(lease, (run) => ({
        run: heartbeatRun(run, lease, leaseMs, Date.now()),
        events: [],
      })),
      held.job.extendLock(held.token, leaseMs).catch(() => 0),
    ]);
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

  async pause(lease: LeaseRef, pause: RunPause): Promise<RunRecord> {
    return this.#end(
      lease,
      (run) => pauseRun(run, lease, pause, Date.now()),
      (h, run) => this.#completeAndFetch(h, run.queue),
    );
  }

  async finish(lease: LeaseRef, outcome: RunOutcome): Promise<RunRecord> {
    return this.#end(
      lease,
      (run) => finishRun(run, lease, outcome, Date.now()),
      (h, run) => this.#completeAndFetch(h, run.queue),
    );
  }

  /**
   * Completes the job and, as BullMQ's own workers do, takes the next one in the same script
   * (saving a getNextJob round trip); the next claim of this queue starts from it.
   */
  async #completeAndFetch(held: Held, queue: string): Promise<void> {
    const completed = (await held.job.moveToCompleted(null, held.token, !this.#closed)) as
      unknown[] | undefined;
    const [data, jobId] = completed ?? [];
    const worker = await this.#workers.get(queue);
    if (data === undefined || data === null || worker === undefined) return;
    const next = (await (
      worker as unknown as {
        nextJobFromJobData(d: unknown, id: unknown, token: string): Promise<Job | undefined>;
      }
    ).nextJobFromJobData(data, jobId, held.token)) as Job | undefined;
    if (next === undefined) return;
    if (this.#closed) {
      await next.moveToWait(held.token).catch(() => undefined);
      return;
    }
    let list = this.#prefetched.get(queue);
    if (list === undefined) this.#prefetched.set(queue, (list = []));
    list.push({ job: next, token: held.token });
  }

  async retry(lease: LeaseRef, delayMs: number, error: RunError): Promise<RunRecord> {
    return this.#end(
      lease,
      (run) => retryRun(run, lease, delayMs, error, Date.now()),
      (h, run) =>
        run.status === RunStatus.PENDING
          ? h.job.moveToDelayed(run.availableAt, h.token)
          : h.job.moveToCompleted(null, h.token, false),
    );
  }

  async release(lease: LeaseRef): Promise<RunRecord> {
    return this.#end(
      lease,
      (run) => releaseRun(run, lease, Date.now()),
      (h, run) =>
        run.status === RunStatus.PENDING
          ? h.job.moveToWait(h.token)
          : h.job.moveToCompleted(null, h.token, false),
    );
  }

  /** A write that ends this worker's hold: the record first (the truth), then the job. */
  async #end(
    lease: LeaseRef,
    apply: (run: RunRecord) => Transition,
    move: (held: Held, run: RunRecord) => Promise<unknown>,
  ): Promise<RunRecord> {
    const held = this.#holder(lease);
    const { t } = await this.#leased(lease, apply);
    this.#held.delete(lease.runId);
    // A failed move is harmless: the job stalls or comes back, and its claim drops it (the run
    // is no longer claimable) or delays it to the run's due time.
    await move(held, t.run).catch(() => undefined);
    return t.run;
  }

  /**
   * Re-adds jobs for runs that should be deliverable but whose BullMQ job is gone (an enqueue,
   * resume or redrive that died between its record write and its job add).
   */
  async #sweep(queue: string, leaseMs: number): Promise<void> {
    if (this.#closed) return;
    try {
      const now = Date.now();
      const stuck = [
        ...(await this.#redis.zrangebyscore(
          this.#key("pend", queue),
          "-inf",
          now - 5_000,
          "LIMIT",
          0,
          50,
        )),
        ...(await this.#redis.zrangebyscore(
          this.#key("act", queue),
          "-inf",
          now - 2 * leaseMs - 5_000,
          "LIMIT",
          0,
          50,
        )),
      ];
      for (const runId of stuck) {
        const loaded = await this.#load(runId);
        if (loaded === null) continue;
        const state =
          loaded.job === null ? "unknown" : await this.#queue(queue).getJobState(loaded.job);
        if (state !== "unknown" && state !== "completed" && state !== "failed") continue;
        const job = jobIdFor(runId);
        const [code] = await this.#commit(loaded.run, loaded.v, [], { kind: "" }, job);
        if (code === 1) await this.#addJob(loaded.run, job);
      }
    } catch {
      // The next sweep tries again.
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const s of this.#sweepers) clearInterval(s);
    for (const list of this.#prefetched.values()) {
      for (const { job, token } of list.splice(0))
        await job.moveToWait(token).catch(() => undefined);
    }
    this.#events.wakeAll();
    const workers = await Promise.all([...this.#workers.values()].map((w) => w.catch(() => null)));
    await Promise.all(workers.map((w) => w?.close().catch(() => undefined)));
    await Promise.all([...this.#queues.values()].map((q) => q.close().catch(() => undefined)));
    await Promise.all(this.#bullConnections.map((c) => c.quit().catch(() => c.disconnect())));
    this.#sub.disconnect();
    await this.#redis.quit().catch(() => this.#redis.disconnect());
  }
}
