import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import type { AgentRuntime } from "../runtime/types.js";
import { AgentStatus } from "../types/status.js";

/**
 * Builds the runtime under test. Its default handler timeout must be `timeoutSeconds`, and these
 * handlers must be registered:
 *
 * | name        | behaviour |
 * |-------------|-----------|
 * | `echo`      | output `echo: <message>` |
 * | `fail`      | fails with an error whose text contains `boom` |
 * | `decline`   | returns status `wrong_handler` |
 * | `slow`      | runs for at least 10 s unless stopped |
 * | `stream`    | streams each word of the message followed by one space, as separate chunks |
 * | `delegator` | delegates to `echo` with `inner:<message>`, returns `outer(<delegated output>)` |
 * | `context`   | output `ok`, data `{ request_id, trace_id, user_id, session_id, depth }` from its context |
 * | `usage`     | records 10 prompt + 5 completion tokens costing 0.01 USD, returns `ok` |
 */
export type RuntimeContractSetup = (options: {
  timeoutSeconds: number;
}) => Promise<{ runtime: AgentRuntime; close?: () => Promise<void> }>;

const TIMEOUT_SECONDS = 0.5;
/** Slack for process and container runtimes to notice a deadline and stop. */
const SLACK_MS = 1500;

/**
 * The behaviour every {@link AgentRuntime} must share, written against the interface only. Run it
 * from a vitest file for each implementation.
 *
 * @example
 * describeRuntimeContract("InProcessRuntime", async ({ timeoutSeconds }) => {
 *   const runtime = new InProcessRuntime({ timeoutSeconds });
 *   registerFixtures(runtime);
 *   return { runtime };
 * });
 */
export function describeRuntimeContract(label: string, setup: RuntimeContractSetup): void {
  describe(`runtime contract: ${label}`, () => {
    let runtime: AgentRuntime;
    let close: (() => Promise<void>) | undefined;
    const ctx = (extra: Parameters<typeof ExecContext.create>[0] = {}) =>
      ExecContext.create({ userId: "contract-user", sessionId: "contract-session", ...extra });

    beforeAll(async () => {
      const built = await setup({ timeoutSeconds: TIMEOUT_SECONDS });
      runtime = built.runtime;
      close = built.close;
    });
    afterAll(async () => {
      await runtime?.close();
      await close?.();
    });

    it("lists its handlers", () => {
      const names = runtime.handlerNames();
      for (const n of [
        "echo",
        "fail",
        "decline",
        "slow",
        "stream",
        "delegator",
        "context",
        "usage",
      ]) {
        expect(names).toContain(n);
      }
    });

    it("returns the handler's output as a success", async () => {
      const result = await runtime.invoke("echo", { message: "hello" }, ctx());
      expect(result).toMatchObject({
        status: AgentStatus.SUCCESS,
        output: "echo: hello",
        handler: "echo",
        error: null,
      });
    });

    it("turns a failing handler into an ERROR result with its message", async () => {
      const result = await runtime.invoke("fail", { message: "x" }, ctx());
      expect(result.status).toBe(AgentStatus.ERROR);
      expect(result.error).toContain("boom");
      expect(result.handler).toBe("fail");
    });

    it("passes wrong_handler through", async () => {
      const result = await runtime.invoke("decline", { message: "x" }, ctx());
      expect(result.status).toBe(AgentStatus.WRONG_HANDLER);
    });

    it("answers an unknown handler with an ERROR naming the registered ones", async () => {
      const result = await runtime.invoke("no_such_agent", { message: "x" }, ctx());
      expect(result.status).toBe(AgentStatus.ERROR);
      expect(result.error).toContain("no_such_agent");
      expect(result.error).toContain("echo");
    });

    it("throws INVALID_INPUT for a malformed input", async () => {
      await expect(
        runtime.invoke("echo", { message: 42 } as unknown as { message: string }, ctx()),
      ).rejects.toMatchObject({ code: ErrorCode.INVALID_INPUT });
    });

    it("stops a handler at its timeout with a TIMEOUT result", async () => {
      const started = Date.now();
      const result = await runtime.invoke("slow", { message: "x" }, ctx());
      const elapsed = Date.now() - started;
      expect(result.status).toBe(AgentStatus.TIMEOUT);
      expect(elapsed).toBeGreaterThanOrEqual(TIMEOUT_SECONDS * 1000 - 20);
      expect(elapsed).toBeLessThan(TIMEOUT_SECONDS * 1000 + SLACK_MS);
    });

    it("honours a request deadline shorter than the handler timeout", async () => {
      const started = Date.now();
      const result = await runtime.invoke("slow", { message: "x" }, ctx({ timeoutSeconds: 0.15 }));
      expect(result.status).toBe(AgentStatus.TIMEOUT);
      expect(Date.now() - started).toBeLessThan(150 + SLACK_MS);
    });

    it("ends a cancelled invocation at once, without cancelling the caller's siblings", async () => {
      const parent = ctx();
      const child = parent.child("caller");
      const pending = runtime.invoke("slow", { message: "x" }, child);
      await new Promise((r) => setTimeout(r, 50));
      const cancelledAt = Date.now();
      child.cancel("user left");
      const result = await pending;
      expect(Date.now() - cancelledAt).toBeLessThan(SLACK_MS);
      expect(result.status).toBe(AgentStatus.ERROR);
      expect(result.error).toMatch(/cancel/i);
      expect(parent.isCancelled()).toBe(false);
      const after = await runtime.invoke("echo", { message: "still here" }, parent);
      expect(after.output).toBe("echo: still here");
    });

    it("pushes streamed chunks to ctx.stream in order, before the result", async () => {
      const seen: string[] = [];
      const c = ctx({ stream: { push: (chunk) => void seen.push(chunk) } });
      const result = await runtime.invoke("stream", { message: "one two three" }, c);
      seen.push("<result>");
      expect(seen).toEqual(["one ", "two ", "three ", "<result>"]);
      expect(result).toMatchObject({ status: AgentStatus.SUCCESS, output: "one two three " });
    });

    it("ends the invocation when ctx.stream.push throws: an error naming it, no chunk pushed after", async () => {
      let pushes = 0;
      const c = ctx({
        stream: {
          push: () => {
            pushes++;
            throw new Error("the sink broke");
          },
        },
      });
      const result = await runtime.invoke("stream", { message: "one two three four five" }, c);
      expect(result.status).toBe(AgentStatus.ERROR);
      expect(result.error).toMatch(/the sink broke/);
      expect(pushes).toBe(1);
      const after = await runtime.invoke("echo", { message: "still here" }, ctx());
      expect(after.output).toBe("echo: still here");
    });

    it("delegates from inside a handler, nesting the child's spans", async () => {
      const c = ctx();
      const result = await runtime.invoke("delegator", { message: "hi" }, c);
      expect(result).toMatchObject({
        status: AgentStatus.SUCCESS,
        output: "outer(echo: inner:hi)",
      });
      const outer = c.spans.find(
        (s) => s.name === "runtime.invoke" && s.attributes["handler"] === "delegator",
      );
      const del = c.spans.find((s) => s.name === "delegate" && s.attributes["handler"] === "echo");
      const inner = c.spans.find(
        (s) => s.name === "runtime.invoke" && s.attributes["handler"] === "echo",
      );
      expect(outer).toBeDefined();
      expect(del?.parentId).toBe(outer?.id);
      expect(inner?.parentId).toBe(del?.id);
    });

    it("gives the handler the caller's identity", async () => {
      const c = ctx();
      const result = await runtime.invoke("context", { message: "x" }, c);
      expect(result.status).toBe(AgentStatus.SUCCESS);
      expect(result.data).toMatchObject({
        request_id: c.requestId,
        trace_id: c.traceId,
        user_id: "contract-user",
        session_id: "contract-session",
        depth: 0,
      });
    });

    it("runs a delegation in a child context: same trace, new request id, depth + 1", async () => {
      const c = ctx();
      const result = await runtime.delegate("context", { message: "x" }, c);
      expect(result.data).toMatchObject({
        trace_id: c.traceId,
        user_id: "contract-user",
        depth: 1,
      });
      expect(result.data["request_id"]).not.toBe(c.requestId);
    });

    it("refuses a delegation the permissions do not allow", async () => {
      const c = ctx({ permissions: { allowedAgents: ["echo"] } });
      const result = await runtime.delegate("context", { message: "x" }, c);
      expect(result.status).toBe(AgentStatus.ERROR);
      expect(result.error).toMatch(/permission denied/i);
      expect(c.events.some((e) => e.name === "delegate.refused")).toBe(true);
    });

    it("refuses a delegation past the maximum depth", async () => {
      let deep = ctx();
      for (let i = 0; i < 5; i++) deep = deep.child(`level_${i}`);
      const result = await runtime.delegate("echo", { message: "x" }, deep);
      expect(result.status).toBe(AgentStatus.ERROR);
      expect(result.error).toMatch(/depth/i);
    });

    it("refuses a delegation cycle", async () => {
      const inEcho = ctx().child("echo");
      const result = await runtime.delegate("echo", { message: "x" }, inEcho);
      expect(result.status).toBe(AgentStatus.ERROR);
      expect(result.error).toMatch(/cycle/i);
    });

    it("chains handlers, piping each output into the next message", async () => {
      const result = await runtime.invokeChain(["echo", "echo"], { message: "x" }, ctx());
      expect(result).toMatchObject({
        status: AgentStatus.SUCCESS,
        output: "echo: echo: x",
        handler: "echo",
      });
    });

    it("stops a chain at the first non-success and returns it", async () => {
      const result = await runtime.invokeChain(
        ["echo", "decline", "echo"],
        { message: "x" },
        ctx(),
      );
      expect(result).toMatchObject({ status: AgentStatus.WRONG_HANDLER, handler: "decline" });
    });

    it("throws EMPTY_CHAIN for an empty chain", async () => {
      await expect(runtime.invokeChain([], { message: "x" }, ctx())).rejects.toBeInstanceOf(
        NervaError,
      );
      await expect(runtime.invokeChain([], { message: "x" }, ctx())).rejects.toMatchObject({
        code: ErrorCode.EMPTY_CHAIN,
      });
    });

    it("adds the handler's token usage to the caller's context", async () => {
      const c = ctx();
      await runtime.invoke("usage", { message: "x" }, c);
      expect(c.tokenUsage).toMatchObject({
        promptTokens: 10,
        completionTokens: 5,
        totalTokens: 15,
      });
      expect(c.tokenUsage.costUsd).toBeCloseTo(0.01, 10);
    });

    it("keeps concurrent invocations apart", async () => {
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => runtime.invoke("echo", { message: `m${i}` }, ctx())),
      );
      results.forEach((r, i) => expect(r.output).toBe(`echo: m${i}`));
    });

    it("opens the circuit after repeated failures and answers at once", async () => {
      for (let i = 0; i < 3; i++) await runtime.invoke("fail", { message: "x" }, ctx());
      const started = Date.now();
      const result = await runtime.invoke("fail", { message: "x" }, ctx());
      expect(result.status).toBe(AgentStatus.ERROR);
      expect(result.error).toMatch(/circuit open/i);
      expect(Date.now() - started).toBeLessThan(100);
      const other = await runtime.invoke("echo", { message: "unaffected" }, ctx());
      expect(other.status).toBe(AgentStatus.SUCCESS);
    });
  });
}
