import { describe, expect, it } from "vitest";
import { ErrorCode } from "../errors.js";
import { CircuitBreaker, CircuitState } from "./circuit-breaker.js";

function clocked(options: ConstructorParameters<typeof CircuitBreaker>[0] = {}) {
  let now = 1_000_000;
  const breaker = new CircuitBreaker(options, () => now);
  return { breaker, advance: (ms: number) => (now += ms), now: () => now };
}

const call = (b: CircuitBreaker, status: string) => {
  const permit = b.tryAcquire();
  if (permit.admitted) b.record(permit, status);
  return permit;
};

describe("CircuitBreaker", () => {
  it("opens after failureThreshold consecutive failures; a success resets the count", () => {
    const { breaker } = clocked({ failureThreshold: 3 });
    call(breaker, "error");
    call(breaker, "error");
    call(breaker, "success");
    call(breaker, "error");
    call(breaker, "timeout");
    expect(breaker.state).toBe(CircuitState.CLOSED);
    call(breaker, "error");
    expect(breaker.state).toBe(CircuitState.OPEN);
  });

  it("rejects while open, saying when it will probe", () => {
    const { breaker, now } = clocked({ failureThreshold: 1, recoverySeconds: 60 });
    call(breaker, "error");
    const permit = breaker.tryAcquire();
    expect(permit).toEqual({ admitted: false, retryAfterSeconds: 60, reason: "open" });
    expect(breaker.snapshot()).toMatchObject({
      state: "open",
      nextProbeAt: now() + 60_000,
      consecutiveFailures: 1,
    });
  });

  it("half-opens after recoverySeconds, admits halfOpenMaxCalls probes, closes on success", () => {
    const { breaker, advance } = clocked({
      failureThreshold: 1,
      recoverySeconds: 10,
      halfOpenMaxCalls: 2,
    });
    call(breaker, "error");
    advance(9_999);
    expect(breaker.state).toBe(CircuitState.OPEN);
    advance(1);
    expect(breaker.state).toBe(CircuitState.HALF_OPEN);
    const p1 = breaker.tryAcquire();
    const p2 = breaker.tryAcquire();
    const p3 = breaker.tryAcquire();
    expect([p1.admitted, p2.admitted, p3.admitted]).toEqual([true, true, false]);
    expect(breaker.snapshot().probesInFlight).toBe(2);
    breaker.record(p1, "success");
    expect(breaker.state).toBe(CircuitState.CLOSED);
    breaker.record(p2, "error");
    expect(breaker.state).toBe(CircuitState.CLOSED);
  });

  it("re-opens when a probe fails", () => {
    const { breaker, advance, now } = clocked({ failureThreshold: 1, recoverySeconds: 5 });
    call(breaker, "error");
    advance(5_000);
    call(breaker, "timeout");
    expect(breaker.snapshot()).toMatchObject({ state: "open", openedAt: now() });
  });

  it("does not count declines by default, but does when configured", () => {
    const lenient = clocked({ failureThreshold: 1 }).breaker;
    call(lenient, "wrong_handler");
    call(lenient, "needs_data");
    expect(lenient.state).toBe(CircuitState.CLOSED);
    const strict = clocked({ failureThreshold: 1, failureStatuses: ["wrong_handler"] }).breaker;
    call(strict, "error");
    expect(strict.state).toBe(CircuitState.CLOSED);
    call(strict, "wrong_handler");
    expect(strict.state).toBe(CircuitState.OPEN);
  });

  it("frees a probe slot without a verdict for a cancelled call", () => {
    const { breaker, advance } = clocked({ failureThreshold: 1, recoverySeconds: 1 });
    call(breaker, "error");
    advance(1_000);
    const probe = breaker.tryAcquire();
    breaker.record(probe, null);
    expect(breaker.state).toBe(CircuitState.HALF_OPEN);
    expect(breaker.tryAcquire().admitted).toBe(true);
  });

  it("resets", () => {
    const { breaker } = clocked({ failureThreshold: 1 });
    call(breaker, "error");
    breaker.reset();
    expect(breaker.snapshot()).toMatchObject({
      state: "closed",
      consecutiveFailures: 0,
      openedAt: null,
    });
  });

  it.each([
    [{ failureThreshold: 0 }, "circuitBreaker.failureThreshold"],
    [{ failureThreshold: 1.5 }, "circuitBreaker.failureThreshold"],
    [{ recoverySeconds: -1 }, "circuitBreaker.recoverySeconds"],
    [{ halfOpenMaxCalls: 0 }, "circuitBreaker.halfOpenMaxCalls"],
    [{ failureStatuses: ["meh"] }, "circuitBreaker.failureStatuses.0"],
  ])("rejects %j naming %s", (options, path) => {
    expect(() => new CircuitBreaker(options as never)).toThrow(
      expect.objectContaining({
        code: ErrorCode.INVALID_OPTIONS,
        message: expect.stringContaining(path),
      }),
    );
  });
});
