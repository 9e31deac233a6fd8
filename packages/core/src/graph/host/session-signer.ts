import { ExecContext } from "../../context/exec-context.js";
import { RunQueue } from "../../runs/run-queue.js";
import { RunStatus, type RunRecord } from "../../runs/types.js";
import { answeredSnapshot, toGraphRun, type GraphRun } from "./graph-run.js";
import {
  signSession,
  storedSessionKey,
  type SessionPayload,
  type SessionState,
} from "./session-state.js";

/**
 * The sessionState key of one runtime (the given one, else the one stored beside its queue,
 * read once) and the results it signs: only a paused run carries a signed sessionState.
 */
export class SessionSigner {
  readonly #queue: RunQueue;
  readonly #given: string | Uint8Array | undefined;
  #key: Promise<Buffer> | null = null;

  constructor(queue: RunQueue, given: string | Uint8Array | undefined) {
    this.#queue = queue;
    this.#given = given;
  }

  key(): Promise<Buffer> {
    const given = this.#given;
    if (this.#key !== null) return this.#key;
    const key =
      given !== undefined
        ? Promise.resolve(Buffer.from(given))
        : storedSessionKey(
            new RunQueue({
              store: this.#queue.store,
              name: `${this.#queue.name}.keys`.slice(0, 64),
            }),
            ExecContext.create(),
          );
    this.#key = key;
    // A failed read (the store unavailable) is not remembered: the next call reads again.
    key.catch(() => {
      if (this.#key === key) this.#key = null;
    });
    return key;
  }

  /**
   * `run` as an GraphRun; a paused one with its signed sessionState, an answered one that
   * waits for a worker with the state and path it paused with.
   */
  async result(run: RunRecord): Promise<GraphRun> {
    if (run.status === RunStatus.PENDING && run.pause === null && run.lastSeq > 2) {
      const last = await this.#queue.store.readEvents(run.id, run.lastSeq - 2, 2);
      return toGraphRun(run, unsigned, answeredSnapshot(run, last));
    }
    if (run.status !== RunStatus.PAUSED) return toGraphRun(run, unsigned);
    return this.key().then((key) => toGraphRun(run, (p: SessionPayload) => signSession(key, p)));
  }
}

function unsigned(p: SessionPayload): SessionState {
  return { ...p, sig: "" };
}
