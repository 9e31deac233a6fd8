import { ErrorCode, NervaError, messageOf } from "../../errors.js";
import type { EntryPoint, TriggerSource } from "./entry-points.js";
import type { RunEvent } from "../../runs/types.js";
import type { GraphHost } from "./graph-host.js";
import { nextSlot, parseCron, type Cron } from "./schedule.js";

interface Timer {
  readonly ep: EntryPoint;
  readonly cron: Cron | undefined;
  readonly intervalMs: number | undefined;
  handle: ReturnType<typeof setTimeout> | null;
}

/** Longest single setTimeout (about 24.8 days); longer waits are chained. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * The timer and event entry points of a graph host. Timers fire once per schedule slot across
 * every process sharing the store: each slot's run has the idempotency key `$timer:<slot>`.
 * Event entry points trigger on typed events, never for a run their own entry point
 * caused (directly or through other event entry points), at most `maxDepth` hops deep.
 */
export class Triggers {
  readonly #timers: Timer[];
  readonly #events: EntryPoint[];
  readonly #host: GraphHost;
  readonly #onError: (err: unknown) => void;
  #on = false;

  constructor(host: GraphHost, eps: readonly EntryPoint[], onError: (err: unknown) => void) {
    this.#host = host;
    this.#onError = onError;
    this.#timers = eps
      .filter((ep) => ep.trigger.type === "timer")
      .map((ep) => {
        const t = ep.trigger as { cron?: string; intervalSeconds?: number };
        return {
          ep,
          cron: t.cron === undefined ? undefined : parseCron(t.cron),
          intervalMs: t.intervalSeconds === undefined ? undefined : t.intervalSeconds * 1000,
          handle: null,
        };
      });
    this.#events = eps.filter((ep) => ep.trigger.type === "event");
  }

  /** Whether event entry points need the bus fed. */
  get listens(): boolean {
    return this.#on && this.#events.length > 0;
  }

  start(): void {
    this.#on = true;
    for (const t of this.#timers) this.#arm(t, Date.now());
  }

  stop(): void {
    this.#on = false;
    for (const t of this.#timers) {
      if (t.handle !== null) clearTimeout(t.handle);
      t.handle = null;
    }
  }

  #arm(t: Timer, after: number): void {
    if (!this.#on) return;
    const slot = nextSlot(t, after);
    const wait = Math.min(MAX_TIMER_MS, Math.max(0, slot - Date.now()));
    t.handle = setTimeout(() => {
      t.handle = null;
      if (Date.now() < slot) return this.#arm(t, after);
      this.#fire(t, slot);
      this.#arm(t, slot);
    }, wait);
  }

  #fire(t: Timer, slot: number): void {
    const input = this.#input(t.ep, { type: "timer", slot });
    if (input === null) return;
    this.#host.triggerSlot(t.ep, slot, input).catch((err: unknown) => this.#onError(err));
  }

  /**
   * The start state `ep.input` makes of `source`, or `null` when it threw: the error goes to
   * `onError` (never on into the timer or event callback, where it would end the process) and
   * this firing starts nothing.
   */
  #input(ep: EntryPoint, source: TriggerSource): Record<string, unknown> | null {
    try {
      return ep.input?.(source) ?? {};
    } catch (err) {
      this.#onError(
        new NervaError(
          ErrorCode.INVALID_INPUT,
          `Entry point "${ep.id}": its input(${source.type === "timer" ? `{ slot: ${source.slot} }` : `event ${source.event.type}`}) threw "${messageOf(err)}", so this ${source.type} started nothing. Make input() return the start state without throwing.`,
          { cause: err, issues: [{ path: `entryPoints.${ep.id}.input`, message: "threw" }] },
        ),
      );
      return null;
    }
  }

  /** Called with every event the host publishes. */
  onEvent(event: RunEvent, entryPoint: string): void {
    if (!this.#on) return;
    for (const ep of this.#events) {
      const trigger = ep.trigger as {
        events: readonly string[];
        from?: readonly string[];
        maxDepth: number;
      };
      if (!trigger.events.includes(event.type)) continue;
      if (trigger.from !== undefined && !trigger.from.includes(entryPoint)) continue;
      const chain = this.#host.chainOf(event.runId);
      // The loop guard: this entry point already caused the run the event comes from.
      if (chain.includes(ep.id) || entryPoint === ep.id || chain.length >= trigger.maxDepth)
        continue;
      const input = this.#input(ep, { type: "event", event, entryPoint });
      if (input === null) continue;
      this.#host.triggerFromEvent(ep, event, input).catch((err: unknown) => this.#onError(err));
    }
  }
}
