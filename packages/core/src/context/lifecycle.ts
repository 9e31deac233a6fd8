import { ErrorCode, NervaError } from "../errors.js";

const MAX_TIMER_MS = 2_147_483_647;
const LIVE = 0;
const CANCELLED = 1;
const TIMED_OUT = 2;
const DISPOSED = 3;
type State = typeof LIVE | typeof CANCELLED | typeof TIMED_OUT | typeof DISPOSED;

/**
 * The lifecycle half of an `ExecContext`: the deadline, cancellation down a tree of contexts, the
 * lazily created AbortSignal, and disposal. `ExecContext` extends it; nothing else does.
 *
 * Cancelling a node ends it and every live descendant, never its parent. Nothing is left behind:
 * the AbortSignal and the deadline timer exist only once someone reads `signal` (or a runtime
 * waits on the deadline through `onEnd`), and both are released when the node ends or is
 * disposed. Live children are an intrusive doubly-linked list: O(1) to join and leave, no
 * allocation and no event listener per child.
 *
 * A deadline timer is unref'd, so a context alone never keeps a process alive, except while a
 * runtime waits on it (`onEnd` set): then the deadline must fire, or a script whose only pending
 * work is a hung handler would exit with its promise unsettled instead of getting TIMEOUT.
 */
export abstract class ContextLifecycle {
  /** Epoch milliseconds of the deadline, or `null` when there is none. */
  readonly timeoutAt: number | null;
  abstract readonly requestId: string;
  abstract readonly agentName: string | null;

  /** Lifecycle parent: a cancelled parent cancels this context. */
  protected readonly parentNode: ContextLifecycle | null;
  readonly #onEnd: ((reason: NervaError) => void) | null;
  #firstChild: ContextLifecycle | null = null;
  #prevSibling: ContextLifecycle | null = null;
  #nextSibling: ContextLifecycle | null = null;
  // Membership of the list of contexts waiting for their deadline timer (see #armSoon).
  #armPrev: ContextLifecycle | null = null;
  #armNext: ContextLifecycle | null = null;
  #controller: AbortController | null = null;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #state: State = LIVE;
  #reason: NervaError | null = null;

  protected constructor(
    parent: ContextLifecycle | null,
    timeoutAt: number | null,
    onEnd: ((reason: NervaError) => void) | null,
  ) {
    this.timeoutAt = timeoutAt;
    this.parentNode = parent;
    this.#onEnd = onEnd;
    if (parent !== null) {
      if (parent.#state === CANCELLED || parent.#state === TIMED_OUT) {
        this.#state = parent.#state;
        this.#reason = parent.#reason;
      } else {
        const first = parent.#firstChild;
        this.#nextSibling = first;
        if (first !== null) first.#prevSibling = this;
        parent.#firstChild = this;
      }
    }
  }

  /**
   * Called once by the subclass at the end of its constructor, when every field is set: reports
   * an end inherited from the parent to `onEnd`, or arms the deadline for it.
   */
  protected startLifecycle(): void {
    const onEnd = this.#onEnd;
    if (onEnd === null) return;
    if (this.#reason !== null) onEnd(this.#reason);
    else if (this.timeoutAt !== null) ContextLifecycle.#armSoon(this);
  }

  /**
   * Contexts waiting for their deadline timer. Most handlers finish within the event-loop turn
   * that started them; arming their timers once per turn (one shared setImmediate) instead of
   * once per invocation saves a timer allocation per call. The deadline stays exact: the delay is
   * computed from `timeoutAt` when armed, and a handler that waits for I/O lets the loop reach
   * the check phase (and so its timer) before any I/O completes. A handler that never yields
   * would block any timer anyway.
   */
  static #armHead: ContextLifecycle | null = null;
  static #armScheduled = false;

  static #armSoon(node: ContextLifecycle): void {
    const head = ContextLifecycle.#armHead;
    node.#armNext = head;
    if (head !== null) head.#armPrev = node;
    ContextLifecycle.#armHead = node;
    if (ContextLifecycle.#armScheduled) return;
    ContextLifecycle.#armScheduled = true;
    setImmediate(ContextLifecycle.#armPending);
  }

  static #armPending(this: void): void {
    ContextLifecycle.#armScheduled = false;
    let node = ContextLifecycle.#armHead;
    ContextLifecycle.#armHead = null;
    while (node !== null) {
      const next: ContextLifecycle | null = node.#armNext;
      node.#armPrev = node.#armNext = null;
      node.#arm();
      node = next;
    }
  }

  /**
   * Aborts on deadline or cancellation, with a `NervaError` (TIMEOUT or CANCELLED) as reason.
   * Created on first access; the deadline timer is cleared when the context ends.
   */
  get signal(): AbortSignal {
    if (this.#controller === null) {
      this.#controller = new AbortController();
      if (this.#state === CANCELLED || this.#state === TIMED_OUT) {
        this.#controller.abort(this.#reason);
      } else {
        this.#arm();
      }
    }
    return this.#controller.signal;
  }

  /** Milliseconds left before the deadline (`Infinity` without one, never negative). */
  remainingMs(): number {
    return this.timeoutAt === null ? Infinity : Math.max(0, this.timeoutAt - Date.now());
  }

  isTimedOut(): boolean {
    return (
      this.#state === TIMED_OUT ||
      (this.#state === LIVE && this.timeoutAt !== null && Date.now() >= this.timeoutAt)
    );
  }

  isCancelled(): boolean {
    return this.#state === CANCELLED;
  }

  /** Why the context ended (timeout or cancellation), or `null` while it runs. */
  get endReason(): NervaError | null {
    if (this.#state === LIVE && this.isTimedOut()) this.#expire();
    return this.#reason;
  }

  /** Throws the end reason if the context timed out or was cancelled. */
  throwIfEnded(): void {
    const reason = this.endReason;
    if (reason !== null) throw reason;
  }

  /**
   * Cancels this context and its descendants (never its parent). Aborts `signal` with a
   * `NervaError` CANCELLED carrying `reason`. Later calls are ignored.
   */
  cancel(reason?: string | Error): void {
    if (this.#state !== LIVE) return;
    const error =
      reason instanceof NervaError && reason.code === ErrorCode.CANCELLED
        ? reason
        : new NervaError(
            ErrorCode.CANCELLED,
            `Request ${this.requestId} was cancelled${reason === undefined ? "" : `: ${reason instanceof Error ? reason.message : reason}`}.`,
            reason instanceof Error ? { cause: reason } : {},
          );
    this.#end(CANCELLED, error);
  }

  /**
   * Marks the context finished: clears its timer, detaches it from its parent and cancels any
   * descendants still running. Does not abort `signal` of a context that completed normally.
   */
  dispose(): void {
    if (this.#state !== LIVE) return;
    this.#state = DISPOSED;
    this.#release();
    // Most contexts have no live child left: no closure is made for them.
    if (this.#firstChild !== null) {
      this.#detachChildren((child) => child.cancel(`parent request ${this.requestId} finished`));
    }
  }

  /** Empties the list of live children, handing each to `visit` once it is unlinked. */
  #detachChildren(visit: (child: ContextLifecycle) => void): void {
    let child = this.#firstChild;
    this.#firstChild = null;
    while (child !== null) {
      const next: ContextLifecycle | null = child.#nextSibling;
      child.#prevSibling = child.#nextSibling = null;
      visit(child);
      child = next;
    }
  }

  #arm(): void {
    if (this.#state !== LIVE || this.timeoutAt === null || this.#timer !== null) return;
    const delay = this.timeoutAt - Date.now();
    if (delay <= 0) {
      this.#expire();
      return;
    }
    this.#timer = setTimeout(
      () => {
        this.#timer = null;
        this.#expire();
      },
      Math.min(delay, MAX_TIMER_MS),
    );
    // Someone waits on this deadline (see the class comment): keep the process alive for it.
    if (this.#onEnd === null) this.#timer.unref();
  }

  #expire(): void {
    if (this.#state !== LIVE || this.timeoutAt === null) return;
    if (Date.now() < this.timeoutAt) {
      this.#arm();
      return;
    }
    this.#end(
      TIMED_OUT,
      new NervaError(
        ErrorCode.TIMEOUT,
        `Request ${this.requestId}${this.agentName === null ? "" : ` (${this.agentName})`} reached its deadline.`,
      ),
    );
  }

  #end(state: typeof CANCELLED | typeof TIMED_OUT, reason: NervaError): void {
    this.#state = state;
    this.#reason = reason;
    this.#release();
    this.#controller?.abort(reason);
    this.#detachChildren((child) => {
      if (child.#state === LIVE) child.#end(state, reason);
    });
    this.#onEnd?.(reason);
  }

  #release(): void {
    if (this.#timer !== null) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    // Leave the list of contexts waiting for a timer, if in it.
    const armPrev = this.#armPrev;
    const armNext = this.#armNext;
    if (armPrev !== null) armPrev.#armNext = armNext;
    else if (ContextLifecycle.#armHead === this) ContextLifecycle.#armHead = armNext;
    if (armNext !== null) armNext.#armPrev = armPrev;
    this.#armPrev = this.#armNext = null;
    // Leave the parent's list of live children, if in it.
    const prev = this.#prevSibling;
    const next = this.#nextSibling;
    const parent = this.parentNode;
    if (prev !== null) prev.#nextSibling = next;
    else if (parent !== null && parent.#firstChild === this) parent.#firstChild = next;
    if (next !== null) next.#prevSibling = prev;
    this.#prevSibling = this.#nextSibling = null;
  }
}
