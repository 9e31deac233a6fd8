import { randomBytes } from "node:crypto";
import type { Job, Queue, Worker } from "bullmq";
import type { Redis } from "ioredis";
import type { ClaimRequest, ClaimedRun } from "../store.js";
import type { RunRecord } from "../types.js";
import type { RedisRecords } from "./records.js";
import { toUnavailable } from "./unavailable.js";

/** The parts of the optional `bullmq` package the store uses. */
export interface BullModule {
  Queue: new (name: string, opts: Record<string, unknown>) => Queue;
  Worker: new (name: string, processor: null, opts: Record<string, unknown>) => Worker;
}

/** A fresh BullMQ job id for `runId`: each delivery of a run (enqueue, resume...) gets its own. */
export function jobIdFor(runId: string): string {
  return `${runId}.${randomBytes(4).toString("hex")}`;
}

/**
 * BullMQ's side of a RedisRunStore: its connections, one queue and one (manually driven) worker
 * per run queue, fetching jobs for claims, completing them, and the sweep that re-adds a job a
 * crash lost. The records stay the truth; a job only says "look at this run now".
 */
export class RedisDelivery {
  readonly #bull: BullModule;
  readonly #records: RedisRecords;
  readonly #closed: () => boolean;
  readonly #queues = new Map<string, Queue>();
  readonly #workers = new Map<string, Promise<Worker>>();
  readonly #sweepers: ReturnType<typeof setInterval>[] = [];
  readonly #bullConnections: Redis[] = [];
  /** Jobs BullMQ handed over with a finished one (fetch-next), locked, for the next claims. */
  readonly #prefetched = new Map<string, { job: Job; token: string }[]>();
  /** One getNextJob at a time per store: BullMQ blocks only one caller while the queue is empty. */
  #fetching: Promise<unknown> = Promise.resolve();

  constructor(bull: BullModule, records: RedisRecords, closed: () => boolean) {
    this.#bull = bull;
    this.#records = records;
    this.#closed = closed;
  }

  /**
   * A connection of its own for a BullMQ queue or worker. BullMQ never closes a connection it was
   * given, so close() does: a store left with one open would keep its process alive.
   */
  #bullConnection(): Redis {
    const connection = this.#records.redis.duplicate({ maxRetriesPerRequest: null });
    this.#bullConnections.push(connection);
    return connection;
  }

  queue(name: string): Queue {
    let queue = this.#queues.get(name);
    if (queue === undefined) {
      queue = new this.#bull.Queue(name, {
        // The store's command connection: an add sent right after a record write runs after it.
        connection: this.#records.redis,
        prefix: this.#records.key("bull"),
      });
      queue.on("error", () => undefined);
      this.#queues.set(name, queue);
    }
    return queue;
  }

  #worker(request: ClaimRequest): Promise<Worker> {
    let worker = this.#workers.get(request.queue);
    if (worker === undefined) {
      const leaseMs = Math.round(request.leaseSeconds * 1000);
      const heartbeatMs =
        request.heartbeatSeconds === undefined
          ? Math.max(100, Math.floor(leaseMs / 3))
          : Math.round(request.heartbeatSeconds * 1000);
      const w = new this.#bull.Worker(request.queue, null, {
        connection: this.#bullConnection(),
        prefix: this.#records.key("bull"),
        autorun: false,
        lockDuration: leaseMs,
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
          () => void this.#sweep(request.queue, leaseMs),
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

  async addJob(run: RunRecord, jobId: string): Promise<void> {
    const delay = Math.max(0, run.availableAt - Date.now());
    try {
      await this.queue(run.queue).add(
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

  /**
   * Hands the jobs of `request.queue` to `take` (a prefetched one first, else one fetched under a
   * fresh lock token) until `take` claims one, `request.waitSeconds` passed, `request.signal` aborted
   * or the store closed.
   */
  async claim(
    request: ClaimRequest,
    take: (job: Job, token: string) => Promise<ClaimedRun | null>,
  ): Promise<ClaimedRun | null> {
    const worker = await this.#worker(request);
    const deadline = Date.now() + request.waitSeconds * 1000;
    while (!this.#closed() && request.signal?.aborted !== true) {
      const ready = this.#prefetched.get(request.queue)?.shift();
      if (ready !== undefined) {
        const claimed = await take(ready.job, ready.token);
        if (claimed !== null) return claimed;
        continue;
      }
      const token = `${request.workerId}:${randomBytes(6).toString("hex")}`;
      const next = this.#fetching.then(() =>
        request.signal?.aborted === true || this.#closed()
          ? undefined
          : worker.getNextJob(token, { block: request.waitSeconds > 0 }).catch((e: unknown) => {
              throw toUnavailable(e);
            }),
      );
      this.#fetching = next.catch(() => undefined);
      const job = await this.#raceAbort(next, request.signal, token);
      if (job === undefined || job === null) {
        if (Date.now() >= deadline) return null;
        continue;
      }
      const claimed = await take(job, token);
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

  /**
   * Completes the job and, as BullMQ's own workers do, takes the next one in the same script
   * (saving a getNextJob round trip); the next claim of this queue starts from it.
   */
  async completeAndFetch(job: Job, token: string, queue: string): Promise<void> {
    const completed = (await job.moveToCompleted(null, token, !this.#closed())) as
      unknown[] | undefined;
    const [data, jobId] = completed ?? [];
    const worker = await this.#workers.get(queue);
    if (data === undefined || data === null || worker === undefined) return;
    const next = (await (
      worker as unknown as {
        nextJobFromJobData(d: unknown, id: unknown, token: string): Promise<Job | undefined>;
      }
    ).nextJobFromJobData(data, jobId, token)) as Job | undefined;
    if (next === undefined) return;
    if (this.#closed()) {
      await next.moveToWait(token).catch(() => undefined);
      return;
    }
    let list = this.#prefetched.get(queue);
    if (list === undefined) this.#prefetched.set(queue, (list = []));
    list.push({ job: next, token });
  }

  /**
   * Re-adds jobs for runs that should be deliverable but whose BullMQ job is gone (an enqueue,
   * resume or redrive that died between its record write and its job add).
   */
  async #sweep(queue: string, leaseMs: number): Promise<void> {
    if (this.#closed()) return;
    const redis = this.#records.redis;
    try {
      const now = Date.now();
      const stuck = [
        ...(await redis.zrangebyscore(
          this.#records.key("pend", queue),
          "-inf",
          now - 5_000,
          "LIMIT",
          0,
          50,
        )),
        ...(await redis.zrangebyscore(
          this.#records.key("act", queue),
          "-inf",
          now - 2 * leaseMs - 5_000,
          "LIMIT",
          0,
          50,
        )),
      ];
      for (const runId of stuck) {
        const loaded = await this.#records.load(runId);
        if (loaded === null) continue;
        const state =
          loaded.job === null ? "unknown" : await this.queue(queue).getJobState(loaded.job);
        if (state !== "unknown" && state !== "completed" && state !== "failed") continue;
        const job = jobIdFor(runId);
        const [code] = await this.#records.commit(loaded.run, loaded.v, [], { kind: "" }, job);
        if (code === 1) await this.addJob(loaded.run, job);
      }
    } catch {
      // The next sweep tries again.
    }
  }

  /** First step of closing: no more sweeps, and the prefetched jobs go back to their queues. */
  async stop(): Promise<void> {
    for (const s of this.#sweepers) clearInterval(s);
    for (const list of this.#prefetched.values()) {
      for (const { job, token } of list.splice(0))
        await job.moveToWait(token).catch(() => undefined);
    }
  }

  /** Closes the workers, the queues and the connections given to them. */
  async close(): Promise<void> {
    const workers = await Promise.all([...this.#workers.values()].map((w) => w.catch(() => null)));
    await Promise.all(workers.map((w) => w?.close().catch(() => undefined)));
    await Promise.all([...this.#queues.values()].map((q) => q.close().catch(() => undefined)));
    await Promise.all(this.#bullConnections.map((c) => c.quit().catch(() => c.disconnect())));
  }
}
