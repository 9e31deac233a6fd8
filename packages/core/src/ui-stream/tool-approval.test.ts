// A tool call's approval in the UI message stream, at the core: the chunks (the `ai` package's
// `tool-approval-request` and `tool-output-denied`, v6.0.326 ui-message-stream/ui-message-chunks.ts)
// and the kit's pause, with an engine of the test's own (any PolicyEngine with `approval` and
// `decide` gets what DeclarativePolicyEngine gets). packages/express/src/chat-approval.test.ts
// runs the AI SDK's client against it.
import { describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { Orchestrator } from "../orchestrator/orchestrator.js";
import type { Approval, PolicyAction, PolicyDecision, PolicyEngine } from "../policy/types.js";
import { InMemoryRunStore } from "../runs/memory/in-memory-store.js";
import { RunQueue } from "../runs/run-queue.js";
import { Runner } from "../runs/runner.js";
import type { RunEvent } from "../runs/types.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { FunctionToolManager, defineTool } from "../tools/function-tool-manager.js";
import { z } from "zod";
import { UIChunker, type UIMessageChunk } from "./chunks.js";
import { toUIMessageChunks } from "./stream.js";

const ev = (seq: number, type: string, data: RunEvent["data"] = {}): RunEvent => ({
  runId: "r",
  seq,
  type,
  at: 1,
  attempt: 1,
  data,
});

describe("UIChunker and a tool call's approval", () => {
  const paused = (seq: number, toolCallId: string) =>
    ev(seq, "run.paused", {
      key: "$tool-approval/a1",
      prompt: 'Run tool "refund"?',
      kind: "approval",
      data: { approvalId: "a1", toolCallId, tool: "refund" },
    });

  it("shows the pause of an open call as its approval request; the call started again adds nothing", () => {
    const c = new UIChunker("r");
    const chunks = [
      ev(1, "run.started"),
      ev(2, "tool.started", { tool: "refund", callId: "call_a1", input: { id: 7 } }),
      paused(3, "call_a1"),
      ev(4, "run.resumed"),
      ev(5, "run.started"),
      ev(6, "tool.started", { tool: "refund", callId: "call_a1", input: { id: 7 } }),
      ev(7, "tool.completed", { tool: "refund", callId: "call_a1", status: "success", output: 1 }),
    ].flatMap((e) => [...c.push(e)]);
    expect(chunks.map((x) => x.type)).toEqual([
      "start-step",
      "tool-input-start",
      "tool-input-delta",
      "tool-input-available",
      "tool-approval-request",
      "finish-step",
      "data-nerva-run-resumed",
      "start-step",
      "tool-output-available",
    ]);
    expect(chunks[4]).toEqual({
      type: "tool-approval-request",
      approvalId: "a1",
      toolCallId: "call_a1",
    });
    expect(c.approvalSeq).toBe(3);
  });

  it("ends a denied call as denied, and shows another pause as a data part", () => {
    const c = new UIChunker("r");
    const chunks = [
      ev(1, "tool.started", { tool: "refund", callId: "call_a1" }),
      ev(2, "tool.completed", {
        tool: "refund",
        callId: "call_a1",
        status: "permission_denied",
        approval: "denied",
      }),
      // A pause naming a call this stream never showed is not an approval request.
      paused(3, "call_unknown"),
    ].flatMap((e) => [...c.push(e)]);
    expect(chunks).toContainEqual({ type: "tool-output-denied", toolCallId: "call_a1" });
    expect(chunks.map((x) => x.type)).toContain("data-nerva-run-paused");
    expect(chunks.map((x) => x.type)).not.toContain("tool-approval-request");
  });
});

/** An engine of the test's own: gates `refund` with one self-approvable approval per ask. */
class OwnEngine implements PolicyEngine {
  readonly approvals = new Map<string, Approval>();
  decided: string[] = [];

  async evaluate(action: PolicyAction, ctx: ExecContext): Promise<PolicyDecision> {
    const allow = { effect: "allow", checkpoint: action.checkpoint, reason: "ok", rule: null };
    if (action.kind !== "tool" || action.name !== "refund") return allow as PolicyDecision;
    const mine = [...this.approvals.values()].find(
      (a) => a.userId === ctx.userId && a.status !== "used",
    );
    if (mine?.status === "approved") {
      this.approvals.set(mine.id, { ...mine, status: "used" });
      return allow as PolicyDecision;
    }
    if (mine?.status === "denied") {
      this.approvals.set(mine.id, { ...mine, status: "used" });
      return {
        effect: "deny",
        checkpoint: action.checkpoint,
        code: "POLICY_DENIED",
        reason: "denied",
        rule: "own",
      } as PolicyDecision;
    }
    const a = mine ?? this.#ask(ctx);
    return {
      effect: "pending",
      checkpoint: action.checkpoint,
      code: "APPROVAL_PENDING",
      reason: "needs approval",
      rule: "own",
      approvalId: a.id,
    } as PolicyDecision;
  }

  #ask(ctx: ExecContext): Approval {
    const id = `own-${this.approvals.size + 1}`;
    const a: Approval = {
      id,
      status: "pending",
      rule: "own",
      kind: "tool",
      name: "refund",
      userId: ctx.userId,
      sessionId: ctx.sessionId,
      payload: "{}",
      approverRoles: ["customer"],
      allowSelfApproval: true,
      fingerprint: id,
      createdAt: 0,
      expiresAt: Number.MAX_SAFE_INTEGER,
      decidedAt: null,
      decidedBy: null,
      note: null,
    };
    this.approvals.set(id, a);
    return a;
  }

  async charge(): Promise<void> {}

  async approval(id: string): Promise<Approval | null> {
    return this.approvals.get(id) ?? null;
  }

  async decide(
    id: string,
    answer: { decision: "approve" | "deny" },
    ctx: ExecContext,
  ): Promise<Approval | null> {
    const a = this.approvals.get(id);
    if (a === undefined) return null;
    this.decided.push(`${ctx.userId}:${answer.decision}`);
    const next: Approval = {
      ...a,
      status: answer.decision === "approve" ? "approved" : "denied",
      decidedBy: ctx.userId,
    };
    this.approvals.set(id, next);
    return next;
  }
}

async function chat(decision: "approve" | "deny") {
  const policy = new OwnEngine();
  let runs = 0;
  const tools = new FunctionToolManager().register(
    defineTool({
      name: "refund",
      description: "Refunds",
      parameters: z.object({ id: z.number() }),
      run: async () => ++runs,
    }),
  );
  const runtime = new InProcessRuntime();
  const orchestrator = new Orchestrator({ tools, runtime, policy });
  runtime.register(
    "agent",
    orchestrator.handler(async function* (_input, _ctx, kit) {
      const r = await kit.tools.call("refund", { id: 7 });
      yield `refund: ${r.status}`;
    }),
  );
  const queue = new RunQueue({ store: new InMemoryRunStore(), retry: { maxAttempts: 1 } });
  const runner = new Runner({ queue, runtime });
  await runner.start();
  const ctx = ExecContext.create({ userId: "u1", permissions: { roles: ["customer"] } });
  const run = await queue.enqueue({ handler: "agent", input: { message: "go" }, ctx });
  const paused = await queue.wait(run.id, { until: ["paused"], timeoutSeconds: 10 });
  const waitsAt = async (seq: number) => {
    const now = await queue.get(run.id);
    return now?.status === "paused" && now.lastSeq === seq;
  };
  const first: UIMessageChunk[] = [];
  for await (const m of toUIMessageChunks(queue.events(run.id), { runId: run.id, waitsAt })) {
    if (typeof m.data !== "string") first.push(m.data);
  }
  // Someone else cannot answer the run's pause.
  const other = ExecContext.create({ userId: "u2", permissions: { roles: ["customer"] } });
  await expect(
    queue.resume(run.id, { decision: "approve" }, { key: paused.pause!.key, ctx: other }),
  ).rejects.toMatchObject({ code: "PERMISSION_DENIED" });
  await queue.resume(run.id, { decision }, { key: paused.pause!.key, ctx });
  const done = await queue.wait(run.id, { timeoutSeconds: 10 });
  const all: UIMessageChunk[] = [];
  for await (const m of toUIMessageChunks(queue.events(run.id), { runId: run.id, waitsAt })) {
    if (typeof m.data !== "string") all.push(m.data);
  }
  await runner.stop();
  return { first, all, done, runs, policy };
}

describe("a tool call's approval with an engine of one's own", () => {
  it("pauses the run; the approval runs the tool once, and a replay shows one tool part", async () => {
    const { first, all, done, runs, policy } = await chat("approve");
    expect(first.map((c) => c.type).slice(-3)).toEqual([
      "tool-approval-request",
      "finish-step",
      "finish",
    ]);
    expect(first.at(-1)).toMatchObject({
      finishReason: "tool-calls",
      messageMetadata: { status: "paused" },
    });
    expect(done.status).toBe("succeeded");
    expect(runs).toBe(1);
    expect(policy.decided).toEqual(["u1:approve"]);
    // The whole run replayed: one call, asked, then answered; the message ends once.
    const types = all.map((c) => c.type);
    expect(types.filter((t) => t === "tool-input-available")).toHaveLength(1);
    expect(types.filter((t) => t === "finish")).toHaveLength(1);
    expect(all).toContainEqual(
      expect.objectContaining({ type: "tool-output-available", output: 1 }),
    );
    expect(all).toContainEqual(
      expect.objectContaining({ type: "text-delta", delta: "refund: success" }),
    );
  });

  it("a denial: the tool never runs and the call ends denied", async () => {
    const { all, done, runs } = await chat("deny");
    expect(done.status).toBe("succeeded");
    expect(runs).toBe(0);
    expect(all.map((c) => c.type)).toContain("tool-output-denied");
    expect(all).toContainEqual(
      expect.objectContaining({ type: "text-delta", delta: "refund: permission_denied" }),
    );
  });
});
