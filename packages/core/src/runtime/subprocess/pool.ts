import type { AgentResult } from "../../types/agent.js";
import { thrownResult } from "../results.js";
import { WorkerProcess, type WorkerJob, type WorkerSettings } from "./worker-process.js";

/** Sizing of a {@link WorkerPool}. */
export interface PoolSettings {
  readonly min: number;
  readonly max: number;
  readonly idleSeconds: number;
  readonly maxInvocationsPerWorker: number;
}

/** What `SubprocessRuntime.stats()` reports about the pool. */
export interface PoolStats {
  readonly workers: readonly { pid: number | null; state: string; invocations: number }[];
  /** Invocations waiting for a free worker. */
  readonly waiting: number;
  /** Workers started since the pool was created (replacements and recycling included). */
  readonly started: number;
  /** Workers that died or were killed while running a handler (each one replaced). */
  readonly died: number;
  /** Workers retired after `maxInvocationsPerWorker` or `idleSeconds`. */
  readonly recycled: number;
}

interface Waiter {
  readonly give: (worker: WorkerProcess) => void;
  readonly fail: (err: Error) => void;
}

/**
 * A pool of warm Node workers. At most `max` run handlers at once; a worker waiting on a
 * delegation does not count (its handler is blocked on the host), so a handler delegating to
 * another module handler never deadlocks a full pool. Dead workers are replaced to keep `min`
 * warm; workers are recycled after `maxInvocationsPerWorker` invocations or `idleSeconds` idle.
 * Idle workers do not keep the host process alive.
 */
export class WorkerPool {
  readonly #settings: PoolSettings;
  readonly #worker: WorkerSettings;
  readonly #all = new Set<WorkerProcess>();
  readonly #idle: WorkerProcess[] = [];
  readonly #idleTimers = new Map<WorkerProcess, ReturnType<typeof setTimeout>>();
  readonly #waiters: Waiter[] = [];
  #starting = 0;
  #blocked = 0;
  #closed = false;
  #started = 0;
  #died = 0;
  /** Every process not yet exited, retired ones included: close() waits for all of them. */
  readonly #procs = new Set<WorkerProcess>();
  #recycled = 0;
  /** After a failed start, stop refilling `min` on our own until someone asks for a worker. */
  #backoff = false;

  constructor(settings: PoolSettings, worker: WorkerSettings) {
    this.#settings = settings;
    this.#worker = worker;
  }

  /** Starts workers up to `min` and resolves when they are ready (or failed to start). */
  async warmUp(): Promise<void> {
    this.#backoff = false;
    this.#fill();
    await Promise.all([...this.#all].map((w) => w.ready.catch(() => undefined)));
  }

  stats(): PoolStats {
    return {
      workers: [...this.#all].map((w) => ({
        pid: w.pid ?? null,
        state: w.state,
        invocations: w.invocations,
      })),
      waiting: this.#waiters.length,
      started: this.#started,
      died: this.#died,
      recycled: this.#recycled,
    };
  }

  /** Runs `job` on a worker; resolves with an ERROR result if no worker could be had. */
  async run(job: WorkerJob): Promise<AgentResult> {
    let worker: WorkerProcess;
    try {
      worker = await this.#acquire(job);
    } catch (err) {
      return thrownResult(job.handler, err);
    }
    const onBlocked = (delta: 1 | -1): void => {
      this.#blocked += delta;
      job.onBlocked(delta);
      if (delta === 1) this.#pump();
    };
    const result = await worker.run({ ...job, onBlocked });
    if (worker.state === "dead") {
      if (result.status !== "success") this.#died++;
    } else {
      this.#release(worker);
    }
    return result;
  }

  #acquire(job: WorkerJob): Promise<WorkerProcess> {
    if (this.#closed) return Promise.reject(new Error("The SubprocessRuntime is closed."));
    this.#backoff = false;
    return new Promise<WorkerProcess>((resolve, reject) => {
      const signal = job.scoped.signal;
      const onAbort = (): void => {
        const i = this.#waiters.indexOf(waiter);
        if (i !== -1) this.#waiters.splice(i, 1);
        reject(new Error(`Handler "${job.handler}" was stopped while waiting for a worker.`));
      };
      const waiter: Waiter = {
        give: (w) => {
          signal.removeEventListener("abort", onAbort);
          resolve(w);
        },
        fail: (err) => {
          signal.removeEventListener("abort", onAbort);
          reject(err);
        },
      };
      if (signal.aborted) {
        onAbort();
        return;
      }
      signal.addEventListener("abort", onAbort, { once: true });
      this.#waiters.push(waiter);
      this.#pump();
    });
  }

  #release(worker: WorkerProcess): void {
    if (this.#closed) {
      worker.kill();
      return;
    }
    if (worker.invocations >= this.#settings.maxInvocationsPerWorker) {
      this.#retire(worker);
      this.#pump();
      return;
    }
    this.#makeIdle(worker);
    this.#pump();
  }

  #makeIdle(worker: WorkerProcess): void {
    worker.setRef(false);
    this.#idle.push(worker);
    const timer = setTimeout(() => {
      this.#idleTimers.delete(worker);
      const i = this.#idle.indexOf(worker);
      if (i === -1) return;
      this.#idle.splice(i, 1);
      this.#retire(worker);
      this.#fill();
    }, this.#settings.idleSeconds * 1000);
    timer.unref();
    this.#idleTimers.set(worker, timer);
  }

  #takeIdle(): WorkerProcess | undefined {
    // Most recently used first: its caches are warmest.
    const worker = this.#idle.pop();
    if (worker === undefined) return undefined;
    const timer = this.#idleTimers.get(worker);
    if (timer !== undefined) clearTimeout(timer);
    this.#idleTimers.delete(worker);
    worker.setRef(true);
    return worker;
  }

  #retire(worker: WorkerProcess): void {
    this.#recycled++;
    this.#all.delete(worker);
    worker.retire();
  }

  /** Hands idle workers to waiters and starts workers while there is room. */
  #pump(): void {
    if (this.#closed) return;
    while (this.#waiters.length > 0) {
      const worker = this.#takeIdle();
      if (worker === undefined) break;
      (this.#waiters.shift() as Waiter).give(worker);
    }
    let needed = this.#waiters.length - this.#starting;
    while (needed > 0 && this.#all.size - this.#blocked < this.#settings.max) {
      this.#spawn();
      needed--;
    }
    this.#fill();
  }

  #fill(): void {
    if (this.#closed || this.#backoff) return;
    while (this.#all.size < this.#settings.min) this.#spawn();
  }

  #spawn(): void {
    let worker: WorkerProcess;
    try {
      worker = new WorkerProcess(this.#worker);
    } catch (err) {
      this.#backoff = true;
      this.#waiters.shift()?.fail(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    this.#started++;
    this.#starting++;
    this.#procs.add(worker);
    void worker.exited.then(() => this.#procs.delete(worker));
    this.#all.add(worker);
    worker.onDeath = () => {
      this.#all.delete(worker);
      const i = this.#idle.indexOf(worker);
      if (i !== -1) {
        this.#idle.splice(i, 1);
        const timer = this.#idleTimers.get(worker);
        if (timer !== undefined) clearTimeout(timer);
        this.#idleTimers.delete(worker);
      }
      this.#pump();
    };
    worker.ready.then(
      () => {
        this.#starting--;
        if (this.#closed) {
          worker.kill();
          return;
        }
        this.#makeIdle(worker);
        this.#pump();
      },
      (err: Error) => {
        this.#starting--;
        this.#backoff = true;
        const waiter = this.#waiters.shift();
        waiter?.fail(new Error(`Could not start a worker for this handler: ${err.message}`));
        this.#pump();
      },
    );
  }

  /** Kills every worker and fails every waiter; resolves when all workers have exited. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const waiter of this.#waiters.splice(0)) {
      waiter.fail(new Error("The SubprocessRuntime was closed."));
    }
    for (const timer of this.#idleTimers.values()) clearTimeout(timer);
    this.#idleTimers.clear();
    const workers = [...this.#procs];
    this.#idle.length = 0;
    for (const w of workers) w.kill();
    await Promise.all(workers.map((w) => w.exited));
  }
}
