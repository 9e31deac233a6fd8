import { z } from "zod";
import { ErrorCode, parseOrThrow } from "../errors.js";
import { AGENT_STATUSES, AgentStatus } from "../types/status.js";

/** @example if (runtime.circuit("my_agent")?.state === CircuitState.OPEN) alert(); */
export const CircuitState = { CLOSED: "closed", OPEN: "open", HALF_OPEN: "half_open" } as const;
export type CircuitState = (typeof CircuitState)[keyof typeof CircuitState];

export const CircuitBreakerOptionsSchema = z
  .object({
    failureThreshold: z.number().int().min(1).default(3),
    recoverySeconds: z.number().nonnegative().finite().default(60),
    halfOpenMaxCalls: z.number().int().min(1).default(1),
    failureStatuses: z
      .array(z.enum(AGENT_STATUSES))
      .default([AgentStatus.ERROR, AgentStatus.TIMEOUT]),
  })
  .strict();
/** Breaker settings; every field has a default (3 failures, 60 s, 1 probe, error + timeout). */
export type CircuitBreakerOptions = z.input<typeof CircuitBreakerOptionsSchema>;

/** What {@link CircuitBreaker.snapshot} reports. Times are epoch milliseconds. */
export interface CircuitSnapshot {
  readonly state: CircuitState;
  readonly consecutiveFailures: number;
  readonly openedAt: number | null;
  /** When an open circuit admits its next probe. */
  readonly nextProbeAt: number | null;
  readonly probesInFlight: number;
}

/** Admission ticket from {@link CircuitBreaker.tryAcquire}; hand it back to `record`. */
export type CircuitPermit =
  | { readonly admitted: true; readonly probe: boolean }
  | { readonly admitted: false; readonly retryAfterSeconds: number; readonly reason: string };

/**
 * Per-handler circuit breaker: CLOSED → OPEN after `failureThreshold` consecutive failures →
 * HALF_OPEN after `recoverySeconds`, admitting `halfOpenMaxCalls` probes → CLOSED when a probe
 * succeeds, OPEN again when one fails. Statuses outside `failureStatuses` (a handler declining
 * with wrong_handler, asking for data) count as successes.
 *
 * @example
 * const breaker = new CircuitBreaker({ failureThreshold: 3, recoverySeconds: 60 });
 * const permit = breaker.tryAcquire();
 * if (permit.admitted) breaker.record(permit, (await call()).status);
 */
export class CircuitBreaker {
  readonly options: Readonly<z.output<typeof CircuitBreakerOptionsSchema>>;
  readonly #clock: () => number;
  readonly #failureStatuses: ReadonlySet<string>;
  #state: CircuitState = CircuitState.CLOSED;
  #failures = 0;
  #openedAt: number | null = null;
  #probes = 0;

  constructor(options: CircuitBreakerOptions = {}, clock: () => number = Date.now) {
    this.options = Object.freeze(
      parseOrThrow(
        CircuitBreakerOptionsSchema,
        options,
        ErrorCode.INVALID_OPTIONS,
        "circuitBreaker",
        "failureThreshold and halfOpenMaxCalls are integers >= 1, recoverySeconds >= 0.",
      ),
    );
    this.#clock = clock;
    this.#failureStatuses = new Set(this.options.failureStatuses);
  }

  get state(): CircuitState {
    this.#advance();
    return this.#state;
  }

  snapshot(): CircuitSnapshot {
    this.#advance();
    return {
      state: this.#state,
      consecutiveFailures: this.#failures,
      openedAt: this.#openedAt,
      nextProbeAt:
        this.#openedAt === null ? null : this.#openedAt + this.options.recoverySeconds * 1000,
      probesInFlight: this.#probes,
    };
  }

  /** Asks to make one call. A refusal says when the next probe will be admitted. */
  tryAcquire(): CircuitPermit {
    this.#advance();
    if (this.#state === CircuitState.CLOSED) return ADMITTED;
    if (this.#state === CircuitState.OPEN) {
      const now = this.#clock();
      const probeAt = (this.#openedAt ?? now) + this.options.recoverySeconds * 1000;
      return {
        admitted: false,
        retryAfterSeconds: Math.max(0, probeAt - now) / 1000,
        reason: "open",
      };
    }
    if (this.#probes >= this.options.halfOpenMaxCalls) {
      return { admitted: false, retryAfterSeconds: 0, reason: "half-open, probe in progress" };
    }
    this.#probes++;
    return PROBE;
  }

  /**
   * Records the outcome of an admitted call. Pass `null` for a call that ended without a verdict
   * (cancelled by its caller): it frees a probe slot but counts neither way.
   */
  record(permit: CircuitPermit, status: string | null): void {
    if (!permit.admitted) return;
    const failed = status !== null && this.#failureStatuses.has(status);
    if (permit.probe) {
      this.#probes = Math.max(0, this.#probes - 1);
      if (status === null || this.#state !== CircuitState.HALF_OPEN) return;
      if (failed) this.#open();
      else this.#close();
      return;
    }
    if (this.#state !== CircuitState.CLOSED || status === null) return;
    if (!failed) {
      this.#failures = 0;
    } else if (++this.#failures >= this.options.failureThreshold) {
      this.#open();
    }
  }

  /** Forces the breaker back to CLOSED. */
  reset(): void {
    this.#close();
    this.#probes = 0;
  }

  #advance(): void {
    if (
      this.#state === CircuitState.OPEN &&
      this.#openedAt !== null &&
      this.#clock() >= this.#openedAt + this.options.recoverySeconds * 1000
    ) {
      this.#state = CircuitState.HALF_OPEN;
      this.#probes = 0;
    }
  }

  #open(): void {
    this.#state = CircuitState.OPEN;
    this.#openedAt = this.#clock();
  }

  #close(): void {
    this.#state = CircuitState.CLOSED;
    this.#failures = 0;
    this.#openedAt = null;
  }
}

const ADMITTED: CircuitPermit = Object.freeze({ admitted: true, probe: false });
const PROBE: CircuitPermit = Object.freeze({ admitted: true, probe: true });
