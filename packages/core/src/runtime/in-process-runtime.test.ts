import { describe, expect, it, vi } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import { describeRuntimeContract } from "../testing/runtime-contract.js";
import { AgentStatus } from "../types/status.js";
import { CircuitState } from "./circuit-breaker.js";
import { InProcessRuntime } from "./in-process-runtime.js";

function registerFixtures(runtime: InProcessRuntime): InProcessRuntime {
  return runtime
    .register("echo", async (input) => `echo: ${input.message}`)
    .register("fail", async () => {
      throw new Error("boom");
    })
    .register("decline", async () => ({ status: AgentStatus.WRONG_HANDLER }))
    .register(
      "slow",
      (_input, ctx) =>
        new Promise<string>((resolve, reject) => {
          const timer = setTimeout(resolve, 10_000, "late");
          ctx.signal.addEventListener("abort", () => {
            clearTimeout(timer);
            reject(ctx.signal.reason);
          });
        }),
    )
    .register("stream", async function* (input) {
      for (const word of input.message.split(/\s+/)) yield `${word} `;
    })
    .register("delegator", async (input, ctx, rt) => {
      const inner = await rt.delegate("echo", { message: `inner:${input.message}` }, ctx);
      return `outer(${inner.output})`;
    })
    .register("context", async (_input, ctx) => ({
      output: "ok",
      data: {
        request_id: ctx.requestId,
        trace_id: ctx.traceId,
        user_id: ctx.userId,
        session_id: ctx.sessionId,
        depth: ctx.depth,
      },
    }))
    .register("usage", async (_input, ctx) => {
      ctx.recordTokens({ promptTokens: 10, completionTokens: 5, costUsd: 0.01 });
      return "ok";
    });
}

describeRuntimeContract("InProcessRuntime", async ({ timeoutSeconds }) => ({
  runtime: registerFixtures(new InProcessRuntime({ timeoutSeconds })),
}));

const ctx = () => ExecContext.create({ userId: "u1" });

describe("InProcessRuntime handlers", () => {
  it("accepts a partial AgentResult and fills the rest", async () => {
    const rt = new InProcessRuntime().register("needs", async () => ({
      status: AgentStatus.NEEDS_DATA,
      data: { missing: ["date"] },
    }));
    expect(await rt.invoke("needs", { message: "x" }, ctx())).toEqual({
      status: "needs_data",
      output: "",
      data: { missing: ["date"] },
      error: null,
      handler: "needs",
    });
  });

  it("rejects an invalid returned result with an ERROR naming the field", async () => {
    const rt = new InProcessRuntime().register("bad", async () => ({ status: "nope" }) as never);
    const result = await rt.invoke("bad", { message: "x" }, ctx());
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toContain("result.status");
  });

  it("rejects a non-string, non-object return value", async () => {
    const rt = new InProcessRuntime().register("num", (() => 42) as never);
    const result = await rt.invoke("num", { message: "x" }, ctx());
    expect(result.error).toMatch(/returned a number/);
  });

  it("turns a synchronous throw into an ERROR result", async () => {
    const rt = new InProcessRuntime().register("sync", () => {
      throw new TypeError("sync boom");
    });
    expect(await rt.invoke("sync", { message: "x" }, ctx())).toMatchObject({
      status: AgentStatus.ERROR,
      error: "sync boom",
    });
  });

  it("merges a streaming handler's return value into the result", async () => {
    const rt = new InProcessRuntime().register("gen", async function* () {
      yield "a";
      yield "b";
      return { data: { done: true } } as never;
    });
    expect(await rt.invoke("gen", { message: "x" }, ctx())).toMatchObject({
      output: "ab",
      data: { done: true },
    });
  });

  it("aborts the handler's signal at its timeout and stops a streaming handler", async () => {
    let aborted: unknown = null;
    let yielded = 0;
    const rt = new InProcessRuntime().register(
      "ticker",
      async function* (_input, c) {
        c.signal.addEventListener("abort", () => (aborted = c.signal.reason));
        for (;;) {
          yielded++;
          yield ".";
          await new Promise((r) => setTimeout(r, 10));
        }
      },
      { timeoutSeconds: 0.1 },
    );
    const result = await rt.invoke("ticker", { message: "x" }, ctx());
    expect(result.status).toBe(AgentStatus.TIMEOUT);
    expect(aborted).toBeInstanceOf(NervaError);
    expect((aborted as NervaError).code).toBe(ErrorCode.TIMEOUT);
    const count = yielded;
    await new Promise((r) => setTimeout(r, 60));
    expect(yielded).toBeLessThanOrEqual(count + 1);
  });

  it("times out a handler that ignores its signal, and never leaks its late rejection", async () => {
    const unhandled = vi.fn();
    process.on("unhandledRejection", unhandled);
    const rt = new InProcessRuntime().register(
      "stubborn",
      () => new Promise((_, reject) => setTimeout(() => reject(new Error("late")), 80)),
      { timeoutSeconds: 0.02 },
    );
    const result = await rt.invoke("stubborn", { message: "x" }, ctx());
    expect(result.status).toBe(AgentStatus.TIMEOUT);
    await new Promise((r) => setTimeout(r, 120));
    process.off("unhandledRejection", unhandled);
    expect(unhandled).not.toHaveBeenCalled();
  });

  it("times out a handler awaiting a promise that never settles (no I/O, no timers)", async () => {
    const rt = new InProcessRuntime().register("hang", () => new Promise<string>(() => undefined), {
      timeoutSeconds: 0.05,
    });
    const started = Date.now();
    const result = await rt.invoke("hang", { message: "x" }, ctx());
    expect(result.status).toBe(AgentStatus.TIMEOUT);
    expect(Date.now() - started).toBeLessThan(500);
  });

  it("arms a deadline timer only for handlers still running after their event-loop turn", async () => {
    const rt = new InProcessRuntime()
      .register("quick", async (i) => i.message)
      .register("waits", () => new Promise<string>(() => undefined), { timeoutSeconds: 1 });
    const setTimeoutSpy = vi.spyOn(globalThis, "setTimeout");
    try {
      for (let i = 0; i < 50; i++) await rt.invoke("quick", { message: "x" }, ctx());
      await new Promise((r) => setImmediate(r));
      expect(setTimeoutSpy).not.toHaveBeenCalled();
    } finally {
      setTimeoutSpy.mockRestore();
    }
    vi.useFakeTimers();
    try {
      const pending = rt.invoke("waits", { message: "x" }, ctx());
      vi.advanceTimersToNextTimer();
      expect(vi.getTimerCount()).toBe(1);
      vi.advanceTimersByTime(1000);
      expect((await pending).status).toBe(AgentStatus.TIMEOUT);
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it("returns at once when the context has already ended", async () => {
    const rt = new InProcessRuntime().register("echo", async (i) => i.message);
    const c = ctx();
    c.cancel("gone");
    const result = await rt.invoke("echo", { message: "x" }, c);
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toMatch(/cancelled/);
  });

  it("gives the handler a context for its own agent, sharing the caller's request", async () => {
    let seen: ExecContext | undefined;
    const rt = new InProcessRuntime().register("who", async (_i, c) => {
      seen = c;
      return "";
    });
    const c = ctx();
    await rt.invoke("who", { message: "x" }, c);
    expect(seen?.agentName).toBe("who");
    expect(seen?.requestId).toBe(c.requestId);
    expect(seen).not.toBe(c);
  });
});

describe("InProcessRuntime validation", () => {
  it.each([
    [{ timeoutSeconds: -1 }, "options.timeoutSeconds"],
    [{ timeoutSeconds: 0 }, "options.timeoutSeconds"],
    [{ circuitBreaker: { failureThreshold: 0 } }, "options.circuitBreaker.failureThreshold"],
    [{ circuitBreaker: { recoverySeconds: -5 } }, "options.circuitBreaker.recoverySeconds"],
    [{ maxDelegationDepth: 0 }, "options.maxDelegationDepth"],
    [{ unknownOption: true }, "options"],
  ])("rejects %j naming %s", (options, path) => {
    try {
      new InProcessRuntime(options as never);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(NervaError);
      expect((err as NervaError).code).toBe(ErrorCode.INVALID_OPTIONS);
      expect((err as NervaError).message).toContain(path);
      expect((err as NervaError).issues.map((i) => i.path)).toContain(path);
    }
  });

  it("rejects a duplicate handler name", () => {
    const rt = new InProcessRuntime().register("a", async () => "");
    expect(() => rt.register("a", async () => "")).toThrow(
      expect.objectContaining({ code: ErrorCode.DUPLICATE_HANDLER }),
    );
  });

  it("rejects bad handler names, non-function handlers and bad handler options", () => {
    const rt = new InProcessRuntime();
    expect(() => rt.register("has space", async () => "")).toThrow(/name/);
    expect(() => rt.register("x", "nope" as never)).toThrow(/must be a function/);
    expect(() => rt.register("y", async () => "", { timeoutSeconds: -2 })).toThrow(
      /options of "y"\.timeoutSeconds/,
    );
  });

  it("rejects a context that is not an ExecContext and a missing handler name", async () => {
    const rt = new InProcessRuntime();
    await expect(rt.invoke("a", { message: "x" }, {} as never)).rejects.toThrow(/ExecContext/);
    await expect(rt.invoke("", { message: "x" }, ctx())).rejects.toThrow(/handler/);
    await expect(rt.invoke("a", { message: "x", extra: 1 } as never, ctx())).rejects.toMatchObject({
      code: ErrorCode.INVALID_INPUT,
    });
  });
});

describe("InProcessRuntime circuit breakers and delegation policy", () => {
  it("keeps a breaker per handler with per-handler settings, and exposes its state", async () => {
    let healthy = false;
    const rt = new InProcessRuntime({ circuitBreaker: { failureThreshold: 5 } })
      .register(
        "flaky",
        async () => {
          if (!healthy) throw new Error("down");
          return "up";
        },
        { circuitBreaker: { failureThreshold: 2, recoverySeconds: 0.05 } },
      )
      .register(
        "unguarded",
        async () => {
          throw new Error("x");
        },
        { circuitBreaker: false },
      );
    await rt.invoke("flaky", { message: "" }, ctx());
    expect(rt.circuit("flaky")?.state).toBe(CircuitState.CLOSED);
    await rt.invoke("flaky", { message: "" }, ctx());
    expect(rt.circuit("flaky")?.state).toBe(CircuitState.OPEN);
    const rejected = await rt.invoke("flaky", { message: "" }, ctx());
    expect(rejected.error).toMatch(/Circuit open.*next probe in/);
    await new Promise((r) => setTimeout(r, 60));
    expect(rt.circuit("flaky")?.state).toBe(CircuitState.HALF_OPEN);
    healthy = true;
    expect((await rt.invoke("flaky", { message: "" }, ctx())).output).toBe("up");
    expect(rt.circuit("flaky")?.state).toBe(CircuitState.CLOSED);
    expect(rt.circuit("unguarded")).toBeUndefined();
    for (let i = 0; i < 10; i++) await rt.invoke("unguarded", { message: "" }, ctx());
    expect((await rt.invoke("unguarded", { message: "" }, ctx())).error).toBe("x");
  });

  it("does not count declines or cancellations as failures", async () => {
    const rt = new InProcessRuntime({ circuitBreaker: { failureThreshold: 1 } })
      .register("decline", async () => ({ status: AgentStatus.WRONG_HANDLER }))
      .register(
        "hang",
        (_i, c) =>
          new Promise((_, rej) =>
            c.signal.addEventListener("abort", () => rej(new Error("stopped"))),
          ),
      );
    for (let i = 0; i < 3; i++) await rt.invoke("decline", { message: "" }, ctx());
    expect(rt.circuit("decline")?.state).toBe(CircuitState.CLOSED);
    const c = ctx();
    const pending = rt.invoke("hang", { message: "" }, c);
    c.cancel();
    await pending;
    expect(rt.circuit("hang")?.state).toBe(CircuitState.CLOSED);
  });

  it("consults the delegation policy and fails closed when it throws", async () => {
    const policy = vi.fn(async ({ to }: { to: string }) =>
      to === "secret" ? { allow: false, reason: "secret is off limits" } : true,
    );
    const rt = new InProcessRuntime({ delegationPolicy: policy })
      .register("open", async () => "open")
      .register("secret", async () => "secret");
    expect((await rt.delegate("open", { message: "" }, ctx())).output).toBe("open");
    expect((await rt.delegate("secret", { message: "" }, ctx())).error).toContain("off limits");
    expect(policy).toHaveBeenCalledWith(expect.objectContaining({ from: null, to: "secret" }));

    const broken = new InProcessRuntime({
      delegationPolicy: () => {
        throw new Error("policy store down");
      },
    }).register("open", async () => "open");
    const result = await broken.delegate("open", { message: "" }, ctx());
    expect(result.status).toBe(AgentStatus.ERROR);
    expect(result.error).toMatch(/policy failed.*denied/);
  });

  it("refuses an indirect cycle A → B → A", async () => {
    const rt = new InProcessRuntime()
      .register("a", async (i, c, r) => (await r.delegate("b", i, c)).error ?? "no error")
      .register("b", async (i, c, r) => {
        const back = await r.delegate("a", i, c);
        return { status: back.status, error: back.error };
      });
    const result = await rt.invoke("a", { message: "" }, ctx());
    expect(result.output).toMatch(/cycle a → b → a/);
  });

  it("lets a child deadline stop delegated work without cancelling the parent", async () => {
    const rt = new InProcessRuntime({ timeoutSeconds: 5 })
      .register("parent", async (i, c, r) => {
        const child = await r.delegate("sleepy", i, c);
        return `child said ${child.status}; parent cancelled=${c.isCancelled()}`;
      })
      .register(
        "sleepy",
        (_i, c) =>
          new Promise((_, rej) => c.signal.addEventListener("abort", () => rej(c.signal.reason))),
        {
          timeoutSeconds: 0.05,
        },
      );
    const result = await rt.invoke("parent", { message: "" }, ctx());
    expect(result.output).toBe("child said timeout; parent cancelled=false");
  });
});
