// A durable run is one request to its rate limits, however often it executes: a handler that calls
// `orchestrator.handle` and then pauses (or throws, and is retried) calls it again when the run
// executes again, and the windows still count the run once. Budgets are checked and held in every
// execution. A real Runner on the in-memory, SQLite and Redis run stores, a real
// DeclarativePolicyEngine and its in-memory limit store; the windows are read by asking them.
import { afterEach, describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { DeclarativePolicyEngine } from "../declarative-policy/declarative-engine.js";
import { ErrorCode, isNervaError } from "../errors.js";
import { Orchestrator } from "../orchestrator/orchestrator.js";
import { RuleRouter } from "../router/rule-router.js";
import { RunQueue } from "../runs/run-queue.js";
import { Runner } from "../runs/runner.js";
import type { RunStore } from "../runs/store.js";
import { storeBackends } from "../runs/store-backends.test-support.js";
import type { AgentHandler } from "../runtime/types.js";
import type { PolicyDocumentInit } from "./document.js";

const open: { store: RunStore; runner: Runner }[] = [];
afterEach(async () => {
  for (const { store, runner } of open.splice(0)) {
    await runner.stop({ graceSeconds: 0 });
    await store.close();
  }
});

/** Two windows of 2 per minute: one counted before routing, one when the agent is invoked. */
const LIMITS: PolicyDocumentInit = {
  version: 1,
  rateLimits: [
    { name: "chats", per: "user", limit: 2, windowSeconds: 60 },
    { name: "echo-calls", per: "user_handler", names: ["echo"], limit: 2, windowSeconds: 60 },
  ],
};

const user = () => ExecContext.create({ userId: "u1" });

/**
 * An orchestrator whose one agent `echo` answers (spending `tokens`), and a Runner whose handler
 * `chat` is `chat(orchestrator)`, on a fresh store of `make`.
 */
async function app(
  make: () => RunStore,
  doc: PolicyDocumentInit,
  chat: (orchestrator: Orchestrator) => AgentHandler,
  tokens = 0,
) {
  const policy = new DeclarativePolicyEngine(doc);
  let echoes = 0;
  const orchestrator = new Orchestrator({
    router: new RuleRouter({ rules: [], defaultHandler: "echo" }),
    agents: {
      echo: (input, ctx) => {
        echoes += 1;
        if (tokens > 0) ctx.recordTokens({ promptTokens: tokens });
        return `echo ${input.message}`;
      },
    },
    policy,
  });
  const store = make();
  const queue = new RunQueue({
    store,
    name: "rate",
    retry: { maxAttempts: 2, initialDelaySeconds: 0.01, jitter: 0 },
  });
  const runner = new Runner({
    queue,
    handlers: { chat: chat(orchestrator) },
    leaseSeconds: 5,
    heartbeatSeconds: 1,
  });
  open.push({ store, runner });
  await runner.start();
  const enqueue = async () =>
    (await queue.enqueue({ handler: "chat", input: { message: "hi" }, ctx: user() })).id;
  /** How many more requests of u1 the windows admit now (each one counted), up to 3. */
  const room = async () => {
    for (let n = 0; n < 3; n++) {
      try {
        await orchestrator.handle("probe", user());
      } catch (err) {
        if (isNervaError(err, ErrorCode.RATE_LIMITED)) return n;
        throw err;
      }
    }
    return 3;
  };
  return { queue, enqueue, room, echoes: () => echoes };
}

describe.each(storeBackends("run-rate"))("a durable run's rate limits on %s", (_name, make) => {
  it("count a run that paused and was resumed once, though it handled the request twice", async () => {
    let executions = 0;
    const { queue, enqueue, room, echoes } = await app(make, LIMITS, (orchestrator) => {
      return async (input, ctx) => {
        executions += 1;
        const answer = await orchestrator.handle(input.message, ctx);
        const go = await ctx.run!.waitForInput<string>("go");
        return `${answer.text} ${go}`;
      };
    });
    const id = await enqueue();
    await queue.wait(id, { until: ["paused"], timeoutSeconds: 10 });
    await queue.resume(id, "ok", { key: "go" });
    const done = await queue.wait(id, { timeoutSeconds: 10 });
    expect(done).toMatchObject({ status: "succeeded", result: { output: "echo hi ok" } });
    expect(executions).toBe(2);
    expect(echoes()).toBe(2);
    // Counted once in each window of 2: one more request of the user fits, not none.
    expect(await room()).toBe(1);
  });

  it("count a run retried after an error once", async () => {
    const { queue, enqueue, room, echoes } = await app(make, LIMITS, (orchestrator) => {
      return async (input, ctx) => {
        const answer = await orchestrator.handle(input.message, ctx);
        if (ctx.run!.attempt === 1) throw new Error("connection reset");
        return answer.text;
      };
    });
    const id = await enqueue();
    const done = await queue.wait(id, { timeoutSeconds: 10 });
    expect(done).toMatchObject({ status: "succeeded", attempt: 2, result: { output: "echo hi" } });
    expect(echoes()).toBe(2);
    expect(await room()).toBe(1);
  });

  it("count two runs twice, and a request made twice in one execution twice", async () => {
    const { queue, enqueue, room } = await app(make, LIMITS, (orchestrator) => {
      return async (input, ctx) => (await orchestrator.handle(input.message, ctx)).text;
    });
    for (const id of [await enqueue(), await enqueue()]) {
      expect(await queue.wait(id, { timeoutSeconds: 10 })).toMatchObject({ status: "succeeded" });
    }
    expect(await room()).toBe(0);

    // Two requests (two child contexts) in one execution are two requests, then the run pauses
    // and executes again: still two.
    const {
      queue: q2,
      enqueue: e2,
      room: room2,
    } = await app(make, LIMITS, (orchestrator) => {
      return async (input, ctx) => {
        const a = await orchestrator.handle(input.message, ctx.child("first"));
        const b = await orchestrator.handle(input.message, ctx.child("second"));
        await ctx.run!.waitForInput("go");
        return `${a.text} ${b.text}`;
      };
    });
    const id = await e2();
    await q2.wait(id, { until: ["paused"], timeoutSeconds: 10 });
    await q2.resume(id, true, { key: "go" });
    expect(await q2.wait(id, { timeoutSeconds: 10 })).toMatchObject({ status: "succeeded" });
    expect(await room2()).toBe(0);
  });

  it("count a request made inside a committed step once, and a new one after the resume", async () => {
    // Windows of 3: the step's request and the one after it in the first execution, a new one
    // in the second. The second execution skips the step; the request after it must still find
    // its own admission, and the new one must be counted, not matched to an earlier admission.
    const doc: PolicyDocumentInit = {
      version: 1,
      rateLimits: [{ name: "chats", per: "user", limit: 3, windowSeconds: 60 }],
    };
    const { queue, enqueue, room, echoes } = await app(make, doc, (orchestrator) => {
      return async (input, ctx) => {
        const asked = await ctx.run!.step(
          "ask",
          async () => (await orchestrator.handle(input.message, ctx.child("in-step"))).text,
        );
        const after = await orchestrator.handle(input.message, ctx.child("after"));
        const go = await ctx.run!.waitForInput<string>("go");
        const last = await orchestrator.handle(go, ctx.child("last"));
        return `${asked}, ${after.text}, ${last.text}`;
      };
    });
    const id = await enqueue();
    await queue.wait(id, { until: ["paused"], timeoutSeconds: 10 });
    await queue.resume(id, "bye", { key: "go" });
    expect(await queue.wait(id, { timeoutSeconds: 10 })).toMatchObject({
      status: "succeeded",
      result: { output: "echo hi, echo hi, echo bye" },
    });
    // The step's agent call ran once, the one after it twice (once per execution), the last once.
    expect(echoes()).toBe(4);
    // Three requests, each counted once: the window of 3 is full.
    expect(await room()).toBe(0);
  });

  it("still hold every execution to the user's budget", async () => {
    // 100 tokens a day; the first execution spends all of them, then pauses.
    const doc: PolicyDocumentInit = {
      ...LIMITS,
      budgets: [{ name: "daily", per: "user", maxTokens: 100, reserveTokens: 10 }],
    };
    const { queue, enqueue } = await app(
      make,
      doc,
      (orchestrator) => async (input, ctx) => {
        const answer = await orchestrator.handle(input.message, ctx).then(
          (r) => r.text,
          (err: unknown) => (isNervaError(err) ? err.code : "?"),
        );
        await ctx.run!.waitForInput("go");
        return answer;
      },
      100,
    );
    const id = await enqueue();
    await queue.wait(id, { until: ["paused"], timeoutSeconds: 10 });
    await queue.resume(id, true, { key: "go" });
    // Executed again, the request is not counted in the windows again, but its budget is
    // checked again: spent, so the agent is refused this time.
    expect(await queue.wait(id, { timeoutSeconds: 10 })).toMatchObject({
      status: "succeeded",
      result: { output: ErrorCode.BUDGET_EXCEEDED },
    });
  });
});
