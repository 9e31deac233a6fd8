// An approval used inside a durable run holds for the run, however often it executes: a handler
// that calls a gated agent through `orchestrator.handle` calls it again when the run executes
// again (a resume, a retry, another worker taking it over), in a new context, and the agent's
// approval, granted and used once, still lets it through: no new approval is asked, none is used
// twice. A different run, or a request outside the run, asks for its own. A real Runner on the
// in-memory, SQLite and Redis run stores, a real DeclarativePolicyEngine whose approvals queue
// lives on the same store.
import { afterEach, describe, expect, it, vi } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { ErrorCode, isNervaError } from "../errors.js";
import { Orchestrator } from "../orchestrator/orchestrator.js";
import type { PolicyDocumentInit } from "../policy/document.js";
import { RuleRouter } from "../router/rule-router.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { RunQueue } from "../runs/run-queue.js";
import { Runner } from "../runs/runner.js";
import { storeBackends } from "../runs/store-backends.test-support.js";
import type { RunStore } from "../runs/store.js";
import type { AgentHandler } from "../runtime/types.js";
import { DeclarativePolicyEngine } from "./declarative-engine.js";

const open: { store: RunStore; runners: Runner[] }[] = [];
afterEach(async () => {
  for (const { store, runners } of open.splice(0)) {
    for (const runner of runners) await runner.stop({ graceSeconds: 0 });
    await store.close();
  }
});

/** The agent `echo` needs a manager's approval. */
const DOC: PolicyDocumentInit = {
  version: 1,
  approvals: [
    { name: "echo-approval", kind: "agent", names: ["echo"], approverRoles: ["manager"] },
  ],
};

const user = () => ExecContext.create({ userId: "u1" });
const manager = () => ExecContext.create({ userId: "boss", permissions: { roles: ["manager"] } });

/**
 * `orchestrator.handle(message, ctx)`; on APPROVAL_PENDING, pauses the run until the app says the
 * approval was decided (a pause keyed by the approval's id, so a new approval is a new pause).
 * Returns the answer's text, or the code of a refusal.
 */
async function gated(
  orchestrator: Orchestrator,
  message: string,
  ctx: ExecContext,
): Promise<string> {
  try {
    return (await orchestrator.handle(message, ctx)).text;
  } catch (err) {
    if (isNervaError(err, ErrorCode.APPROVAL_PENDING)) {
      await ctx.run!.waitForInput(`decided-${err.details.approvalId}`, {
        data: { approvalId: err.details.approvalId },
      });
      // Resumed: the next execution calls handle again and finds the approval decided.
      return "resumed without executing again";
    }
    if (isNervaError(err)) return err.code;
    throw err;
  }
}

/**
 * An orchestrator whose one agent `echo` is gated by DOC, and a Runner whose handler `chat` is
 * `chat(orchestrator)`, on a fresh store of `make`, which also holds the engine's approvals.
 */
async function app(make: () => RunStore, chat: (orchestrator: Orchestrator) => AgentHandler) {
  const store = make();
  const policy = new DeclarativePolicyEngine(DOC, {
    approvals: new RunQueue({ store, name: "approvals" }),
  });
  let echoes = 0;
  const orchestrator = new Orchestrator({
    router: new RuleRouter({ rules: [], defaultHandler: "echo" }),
    agents: {
      echo: (input) => {
        echoes += 1;
        return `echo ${input.message}`;
      },
    },
    policy,
  });
  const queue = new RunQueue({
    store,
    name: "chats",
    retry: { maxAttempts: 2, initialDelaySeconds: 0.01, jitter: 0 },
  });
  // No circuit breaker on `chat`: the Runner's default runtime counts a pause as a failure of
  // the handler, so three pauses in a row (the control below makes them) would open it.
  const runtime = new InProcessRuntime({ circuitBreaker: false });
  runtime.register("chat", chat(orchestrator));
  const runners: Runner[] = [];
  open.push({ store, runners });
  /** Starts one more worker on the queue; returns it. */
  const worker = async () => {
    const runner = new Runner({ queue, runtime, leaseSeconds: 5, heartbeatSeconds: 1 });
    runners.push(runner);
    await runner.start();
    return runner;
  };
  const first = await worker();
  const enqueue = async (message = "hi") =>
    (await queue.enqueue({ handler: "chat", input: { message }, ctx: user() })).id;
  /** Waits for run `id` to pause on an approval; returns the approval's id. */
  const pausedOnApproval = async (id: string) => {
    const run = await queue.wait(id, {
      until: ["paused", "succeeded", "failed", "timed_out", "cancelled"],
      timeoutSeconds: 10,
    });
    const approvalId = run.pause?.data["approvalId"];
    if (typeof approvalId !== "string") {
      throw new Error(`run ${run.status} (pause: ${run.pause?.key}), not paused on an approval`);
    }
    return approvalId;
  };
  /** A manager decides approval `approvalId`, then the app resumes run `id` past its pause. */
  const decide = async (id: string, approvalId: string, decision: "approve" | "deny") => {
    await policy.approvals.resume(approvalId, { decision }, { ctx: manager() });
    await queue.resume(id, true, { key: `decided-${approvalId}` });
  };
  /**
   * Where run `id` stops next: its next pause or its end, as `{ status, paused, output, error }`
   * (`paused`: the pause's key), so that a run stopped somewhere unexpected shows where.
   */
  const settled = async (id: string) => {
    const run = await queue.wait(id, {
      until: ["paused", "succeeded", "failed", "timed_out", "cancelled"],
      timeoutSeconds: 10,
    });
    return {
      status: run.status,
      attempt: run.attempt,
      paused: run.pause?.key ?? null,
      output: run.result?.output ?? null,
      error: run.error?.message ?? null,
    };
  };
  /** Every approval the user was ever asked for (any status). */
  const approvals = async () =>
    (await policy.approvals.list({ userId: "u1", limit: 100 })).runs.map((r) => r.id);
  return {
    queue,
    first,
    worker,
    policy,
    orchestrator,
    enqueue,
    pausedOnApproval,
    decide,
    settled,
    approvals,
    echoes: () => echoes,
  };
}

describe.each(storeBackends("run-approvals"))(
  "an approval inside a durable run on %s",
  (_n, make) => {
    it("holds when the run executes again after a resume: no new approval, none used twice", async () => {
      let executions = 0;
      const a = await app(make, (orchestrator) => async (input, ctx) => {
        executions += 1;
        const answer = await gated(orchestrator, input.message, ctx);
        const go = await ctx.run!.waitForInput<string>("go");
        return `${answer} ${go}`;
      });
      const id = await a.enqueue();
      const approvalId = await a.pausedOnApproval(id);
      expect(a.echoes()).toBe(0);
      await a.decide(id, approvalId, "approve");

      // Executed again: the approval is used, the agent runs, then the run pauses for "go".
      expect(await a.settled(id)).toMatchObject({ status: "paused", paused: "go" });
      expect(a.echoes()).toBe(1);
      expect((await a.policy.approvals.get(approvalId))?.status).toBe("succeeded");

      // Executed a third time: the run's approval still holds, nothing new is asked.
      await a.queue.resume(id, "ok", { key: "go" });
      expect(await a.settled(id)).toMatchObject({
        status: "succeeded",
        paused: null,
        output: "echo hi ok",
      });
      expect(executions).toBe(3);
      expect(a.echoes()).toBe(2); // once in each execution past the approval
      expect(await a.approvals()).toEqual([approvalId]);

      // Used once: the same request outside the run cannot reuse it, it asks anew.
      const outside = await a.orchestrator.handle("hi", user()).catch((e: unknown) => e);
      expect(isNervaError(outside, ErrorCode.APPROVAL_PENDING)).toBe(true);
      const again = (outside as { details: { approvalId: string } }).details.approvalId;
      expect(again).not.toBe(approvalId);
      expect(a.echoes()).toBe(2);
    });

    it("holds for the attempt retried after the approved call threw", async () => {
      const a = await app(make, (orchestrator) => async (input, ctx) => {
        const answer = await gated(orchestrator, input.message, ctx);
        if (ctx.run!.attempt === 1) throw new Error("connection reset");
        return answer;
      });
      const id = await a.enqueue();
      const approvalId = await a.pausedOnApproval(id);
      await a.decide(id, approvalId, "approve");
      expect(await a.settled(id)).toMatchObject({
        status: "succeeded",
        attempt: 2,
        paused: null,
        output: "echo hi",
      });
      expect(a.echoes()).toBe(2);
      expect(await a.approvals()).toEqual([approvalId]);
    });

    it("holds for the worker that takes the run over from one that stopped after the approved call", async () => {
      let hold = true;
      const a = await app(make, (orchestrator) => async (input, ctx) => {
        const answer = await gated(orchestrator, input.message, ctx);
        if (hold) {
          // The first worker keeps the run until it stops, which hands the run back.
          await new Promise((_resolve, reject) => {
            ctx.signal.addEventListener("abort", () => reject(new Error("worker stopped")));
          });
        }
        return answer;
      });
      const id = await a.enqueue();
      const approvalId = await a.pausedOnApproval(id);
      await a.decide(id, approvalId, "approve");
      await vi.waitFor(() => expect(a.echoes()).toBe(1), { timeout: 10_000 });
      hold = false;
      await a.first.stop({ graceSeconds: 0 });
      expect((await a.queue.get(id))?.status).toBe("pending");
      await a.worker();
      expect(await a.settled(id)).toMatchObject({
        status: "succeeded",
        attempt: 1,
        paused: null,
        output: "echo hi",
      });
      expect(a.echoes()).toBe(2);
      expect(await a.approvals()).toEqual([approvalId]);
    });

    it("keeps a denial for the run: executed again, it is refused again without asking", async () => {
      const a = await app(make, (orchestrator) => async (input, ctx) => {
        const answer = await gated(orchestrator, input.message, ctx);
        const go = await ctx.run!.waitForInput<string>("go");
        return `${answer} ${go}`;
      });
      const id = await a.enqueue();
      const approvalId = await a.pausedOnApproval(id);
      await a.decide(id, approvalId, "deny");
      expect(await a.settled(id)).toMatchObject({ status: "paused", paused: "go" });
      await a.queue.resume(id, "ok", { key: "go" });
      expect(await a.settled(id)).toMatchObject({
        status: "succeeded",
        paused: null,
        output: `${ErrorCode.POLICY_DENIED} ok`,
      });
      expect(a.echoes()).toBe(0);
      expect(await a.approvals()).toEqual([approvalId]);
    });

    it("asks a different run for its own approval", async () => {
      const a = await app(make, (orchestrator) => async (input, ctx) => {
        const answer = await gated(orchestrator, input.message, ctx);
        const go = await ctx.run!.waitForInput<string>("go");
        return `${answer} ${go}`;
      });
      const first = await a.enqueue();
      const firstApproval = await a.pausedOnApproval(first);
      await a.decide(first, firstApproval, "approve");
      expect(await a.settled(first)).toMatchObject({ status: "paused", paused: "go" });

      // Another run of the same user, same message: its own approval, not the first run's.
      const second = await a.enqueue();
      const secondApproval = await a.pausedOnApproval(second);
      expect(secondApproval).not.toBe(firstApproval);
      // The first run, executed again, neither takes the second's approval nor asks again.
      await a.queue.resume(first, "ok", { key: "go" });
      expect(await a.settled(first)).toMatchObject({ status: "succeeded", output: "echo hi ok" });
      expect((await a.policy.approvals.get(secondApproval))?.status).toBe("paused");
      await a.decide(second, secondApproval, "approve");
      expect(await a.settled(second)).toMatchObject({ status: "paused", paused: "go" });
      expect(new Set(await a.approvals())).toEqual(new Set([firstApproval, secondApproval]));
      expect(a.echoes()).toBe(3);
    });

    it("counts the gated calls of one execution in order: each finds its own approval", async () => {
      // Two gated calls of the same action in one execution (two requests) are two approvals;
      // executed again, each finds its own.
      const a = await app(make, (orchestrator) => async (input, ctx) => {
        const one = await gated(orchestrator, input.message, ctx.child("first"));
        const two = await gated(orchestrator, input.message, ctx.child("second"));
        const go = await ctx.run!.waitForInput<string>("go");
        return `${one} ${two} ${go}`;
      });
      const id = await a.enqueue();
      const one = await a.pausedOnApproval(id);
      await a.decide(id, one, "approve");
      const two = await a.pausedOnApproval(id);
      expect(two).not.toBe(one);
      await a.decide(id, two, "approve");
      expect(await a.settled(id)).toMatchObject({ status: "paused", paused: "go" });
      await a.queue.resume(id, "ok", { key: "go" });
      expect(await a.settled(id)).toMatchObject({
        status: "succeeded",
        output: "echo hi echo hi ok",
      });
      expect(new Set(await a.approvals())).toEqual(new Set([one, two]));
    });
  },
);
