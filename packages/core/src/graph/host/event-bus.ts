import { randomBytes } from "node:crypto";
import { ErrorCode, NervaError } from "../../errors.js";
import { requireObjectOptions } from "../../internal/object-options.js";
import { safeListener } from "../../internal/report.js";
import type { RunEvent } from "../../runs/types.js";

/** What a subscriber's handler is told besides the event. */
export interface DeliveryInfo {
  /** Events dropped for this subscriber since the previous delivery (its buffer was full). */
  readonly missed: number;
  /** The entry point that started the event's run. */
  readonly entryPoint: string;
}

/** A subscriber's handler. It is called with one event at a time, in order. */
export type EventHandler = (event: RunEvent, info: DeliveryInfo) => void | Promise<void>;

/** Which events a subscriber gets besides their types. */
export interface SubscribeOptions {
  readonly entryPoint?: string;
  readonly runId?: string;
  /** Events held for a handler that is still busy; past it, events are dropped and counted. */
  readonly bufferSize?: number;
}

interface Subscriber {
  readonly id: string;
  readonly types: ReadonlySet<string> | null;
  readonly entryPoint: string | undefined;
  readonly runId: string | undefined;
  readonly handler: EventHandler;
  readonly size: number;
  /** Each buffered event with how many were dropped just before it. */
  readonly buffer: { event: RunEvent; entryPoint: string; missed: number }[];
  /** Dropped since the last buffered event. */
  missed: number;
  /** Dropped in all. */
  missedTotal: number;
  draining: boolean;
}

/** Counters of one subscription. */
export interface SubscriptionStats {
  readonly buffered: number;
  readonly missedTotal: number;
}

/**
 * Delivers run events to subscribers without ever blocking the publisher: each subscriber has
 * a bounded buffer and gets its events in order; when its handler falls behind and the buffer is
 * full, new events are dropped for it and the next delivery says how many (`info.missed`). The
 * complete history stays readable from the durable log (`host.events(id, { afterSeq })`).
 *
 * @example
 * const bus = new EventBus();
 * const id = bus.subscribe([RunEventType.NODE_COMPLETED], (e) => console.log(e.data.node));
 */
export class EventBus {
  readonly #subs = new Map<string, Subscriber>();
  readonly #onError: (err: unknown) => void;
  readonly #defaultSize: number;

  constructor(options: { bufferSize?: number; onError?: (err: unknown) => void } = {}) {
    this.#defaultSize = options.bufferSize ?? 1000;
    this.#onError = safeListener(options.onError, "the EventBus's onError");
  }

  get size(): number {
    return this.#subs.size;
  }

  subscribe(
    types: readonly string[] | null,
    handler: EventHandler,
    options: SubscribeOptions = {},
  ): string {
    if (typeof handler !== "function") {
      throw new NervaError(
        ErrorCode.INVALID_INPUT,
        "Invalid handler: subscribe needs a function (event, info) => void.",
        {
          issues: [{ path: "handler", message: "must be a function" }],
        },
      );
    }
    if (types !== null) {
      const unknown = Array.isArray(types)
        ? types.filter((t) => typeof t !== "string" || t.length === 0 || t.length > 100)
        : [types];
      if (!Array.isArray(types) || unknown.length > 0) {
        throw new NervaError(
          ErrorCode.INVALID_INPUT,
          `Invalid event types ${JSON.stringify(unknown)}: pass a list of run event types (e.g. RunEventType.NODE_COMPLETED, "app.progress") or null for all.`,
          { issues: [{ path: "types", message: "unknown event type" }] },
        );
      }
    }
    requireObjectOptions(
      options,
      ErrorCode.INVALID_INPUT,
      "Pass { entryPoint?, runId?, bufferSize? }.",
    );
    const size = options.bufferSize ?? this.#defaultSize;
    if (!Number.isInteger(size) || size < 1 || size > 1_000_000) {
      throw new NervaError(
        ErrorCode.INVALID_INPUT,
        "Invalid options.bufferSize: must be an integer from 1 to 1000000.",
        {
          issues: [{ path: "options.bufferSize", message: "must be an integer from 1 to 1000000" }],
        },
      );
    }
    const id = `sub_${randomBytes(8).toString("hex")}`;
    this.#subs.set(id, {
      id,
      types: types === null ? null : new Set(types),
      entryPoint: options.entryPoint,
      runId: options.runId,
      handler,
      size,
      buffer: [],
      missed: 0,
      missedTotal: 0,
      draining: false,
    });
    return id;
  }

  /** Removes a subscription; `false` when there was none with that id. */
  unsubscribe(id: string): boolean {
    return this.#subs.delete(id);
  }

  stats(id: string): SubscriptionStats | null {
    const s = this.#subs.get(id);
    return s === undefined ? null : { buffered: s.buffer.length, missedTotal: s.missedTotal };
  }

  /** Hands `event` to every matching subscriber (never waits for one). */
  publish(event: RunEvent, entryPoint: string): void {
    for (const sub of this.#subs.values()) {
      if (sub.types !== null && !sub.types.has(event.type)) continue;
      if (sub.entryPoint !== undefined && sub.entryPoint !== entryPoint) continue;
      if (sub.runId !== undefined && sub.runId !== event.runId) continue;
      if (sub.buffer.length >= sub.size) {
        sub.missed += 1;
        sub.missedTotal += 1;
        continue;
      }
      sub.buffer.push({ event, entryPoint, missed: sub.missed });
      sub.missed = 0;
      if (!sub.draining) {
        sub.draining = true;
        queueMicrotask(() => void this.#drain(sub));
      }
    }
  }

  async #drain(sub: Subscriber): Promise<void> {
    try {
      while (sub.buffer.length > 0 && this.#subs.get(sub.id) === sub) {
        const { event, entryPoint, missed } = sub.buffer.shift() as Subscriber["buffer"][number];
        try {
          await sub.handler(event, { missed, entryPoint });
        } catch (err) {
          this.#onError(err);
        }
      }
    } finally {
      sub.draining = false;
    }
  }
}
