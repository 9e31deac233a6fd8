import { setMaxListeners } from "node:events";
import type { RunQueue } from "../../runs/run-queue.js";
import { RunEventType, isFinalStatus, type RunEvent, type RunRecord } from "../../runs/types.js";
import { NodeTracker } from "../execute/events.js";

/** A run this process follows on the event bus. */
interface Watched {
  readonly chain: readonly string[];
  readonly entryPoint: string;
  readonly tracker: NodeTracker;
  lastSeq: number;
  tailing: boolean;
  /** Watched again while tailing (a resume): a pause seen next does not end the tail. */
  again: boolean;
}

/**
 * Feeds the event bus: follows the runs this process triggers or runs by tailing their run
 * events (only while somebody listens), from where it left off, until they pause or end. An entry
 * lives only while its run is followed: none is kept while nobody listens, and one is
 * dropped when its run pauses (a resume here watches it again from the resume on) or ends,
 * so the map does not grow with runs that ended, wherever they ended.
 */
export class RunWatcher {
  readonly #watched = new Map<string, Watched>();
  #stop = RunWatcher.#controller();

  constructor(
    private readonly queue: RunQueue,
    private readonly nodeIds: ReadonlySet<string>,
    private readonly listening: () => boolean,
    private readonly deliver: (event: RunEvent, entryPoint: string) => void,
    private readonly onError: (err: unknown) => void,
  ) {}

  get size(): number {
    return this.#watched.size;
  }

  has(id: string): boolean {
    return this.#watched.has(id);
  }

  /**
   * Follows run `run` from its events after `afterSeq` (again, after a resume). Nothing
   * is kept while nobody listens.
   */
  watch(run: RunRecord, afterSeq = 0): void {
    if (!this.listening()) return;
    let w = this.#watched.get(run.id);
    if (w === undefined) {
      w = {
        chain: (run.input.args.chain ?? "").split(",").filter((c) => c !== ""),
        entryPoint: run.input.args.entryPoint ?? "default",
        tracker: new NodeTracker(this.nodeIds),
        lastSeq: afterSeq,
        tailing: false,
        again: false,
      };
      this.#watched.set(run.id, w);
    }
    if (w.tailing) w.again = true;
    else this.#tail(run.id, w);
  }

  /** Starts tailing every followed run that is not tailed (a first subscriber came). */
  wake(): void {
    for (const [id, w] of this.#watched) if (!w.tailing) this.#tail(id, w);
  }

  /** Entry points that led to run `id` (for the event loop guard). */
  chainOf(id: string): readonly string[] {
    return this.#watched.get(id)?.chain ?? [];
  }

  stop(): void {
    this.#stop.abort();
    this.#stop = RunWatcher.#controller();
  }

  /**
   * The stop signal every tail waits on: one listener per tail in flight, each removed when its
   * wait ends, so Node's default limit of 10 (and its "possible leak" warning) does not apply.
   */
  static #controller(): AbortController {
    const c = new AbortController();
    setMaxListeners(0, c.signal);
    return c;
  }

  #tail(id: string, w: Watched): void {
    if (!this.listening()) return;
    w.tailing = true;
    const signal = this.#stop.signal;
    void (async () => {
      try {
        for await (const e of this.queue.events(id, { afterSeq: w.lastSeq, signal })) {
          w.lastSeq = e.seq;
          const g = w.tracker.track(e);
          if (g === null) continue;
          this.deliver(g, w.entryPoint);
          if (g.type === RunEventType.PAUSED) {
            if (w.again) {
              w.again = false;
              continue;
            }
            // Paused until someone answers, maybe elsewhere: a resume here watches it again.
            this.#watched.delete(id);
            return;
          }
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
