import type { RunQueue } from "../runs/run-queue.js";
import { isFinalStatus, type RunRecord } from "../runs/types.js";
import { EventProjector, EventType, type GraphEvent } from "./events.js";

/** An execution this process follows on the event bus. */
interface Watched {
  readonly chain: readonly string[];
  readonly projector: EventProjector;
  lastSeq: number;
  tailing: boolean;
}

/**
 * Feeds the event bus: follows the executions this process triggers or runs by tailing their run
 * events (only while somebody listens), from where it left off, until they pause or end.
 */
export class ExecutionWatcher {
  readonly #watched = new Map<string, Watched>();
  #stop = new AbortController();

  constructor(
    private readonly queue: RunQueue,
    private readonly nodeIds: ReadonlySet<string>,
    private readonly listening: () => boolean,
    private readonly deliver: (event: GraphEvent) => void,
    private readonly onError: (err: unknown) => void,
  ) {}

  get size(): number {
    return this.#watched.size;
  }

  has(id: string): boolean {
    return this.#watched.has(id);
  }

  /** Follows execution `run` (again, after a resume). */
  watch(run: RunRecord): void {
    let w = this.#watched.get(run.id);
    if (w === undefined) {
      w = {
        chain: (run.input.args.chain ?? "").split(",").filter((c) => c !== ""),
        projector: new EventProjector(run.id, run.input.args.entryPoint ?? "default", this.nodeIds),
        lastSeq: 0,
        tailing: false,
      };
      this.#watched.set(run.id, w);
    }
    if (!w.tailing) this.#tail(run.id, w);
  }

  /** Starts tailing every followed execution that is not tailed (a first subscriber came). */
  wake(): void {
    for (const [id, w] of this.#watched) if (!w.tailing) this.#tail(id, w);
  }

  /** Entry points that led to execution `id` (for the event loop guard). */
  chainOf(id: string): readonly string[] {
    return this.#watched.get(id)?.chain ?? [];
  }

  stop(): void {
    this.#stop.abort();
    this.#stop = new AbortController();
  }

  #tail(id: string, w: Watched): void {
    if (!this.listening()) return;
    w.tailing = true;
    const signal = this.#stop.signal;
    void (async () => {
      try {
        for await (const e of this.queue.events(id, { afterSeq: w.lastSeq, signal })) {
          w.lastSeq = e.seq;
          const g = w.projector.project(e);
          if (g === null) continue;
          this.deliver(g);
          if (g.type === EventType.EXECUTION_PAUSED) return;
        }
        const run = await this.queue.get(id);
        if (run === null || isFinalStatus(run.status)) this.#watched.delete(id);
      } catch (err) {
        this.onError(err);
      } finally {
        w.tailing = false;
      }
    })();
  }
}
