// The approvals of DeclarativePolicyEngine: paused runs of its approvals queue, decided with
// queue.resume and used once by their requester.
import { describe, expect, it } from "vitest";
import { ExecContext, type ExecContextOptions } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import type { PolicyDocumentInit } from "../policy/document.js";
import type { PolicyAction } from "../policy/types.js";
import { rejection } from "../testing/rejection.js";
import { DeclarativePolicyEngine } from "./declarative-engine.js";

const ctxOf = (o: ExecContextOptions = {}) => ExecContext.create({ userId: "u1", ...o });
const invoke = (name: string, message = "hi"): PolicyAction => ({
  checkpoint: "before_invoke",
  kind: "agent",
  name,
  message,
});
const tool = (name: string, args: unknown = {}): PolicyAction => ({
  checkpoint: "during_execution",
  kind: "tool",
  name,
  args,
});

describe("DeclarativePolicyEngine: approvals", () => {
  const doc: PolicyDocumentInit = {
    version: 1,
    approvals: [
      { name: "transfers", kind: "tool", names: ["wire_transfer"], approverRoles: ["manager"] },
      {
        name: "admin-agent",
        kind: "agent",
        names: ["admin_agent"],
        approverRoles: ["manager"],
        exemptRoles: ["root"],
        ttlSeconds: 60,
      },
    ],
  };
  const manager = () => ExecContext.create({ userId: "boss", permissions: { roles: ["manager"] } });

  it("keeps a gated action pending until approved, then lets it through once", async () => {
    const engine = new DeclarativePolicyEngine(doc);
    const args = { amount: 500, to: "acct-1" };
    const first = await engine.evaluate(tool("wire_transfer", args), ctxOf());
    expect(first).toMatchObject({
      effect: "pending",
      code: ErrorCode.APPROVAL_PENDING,
      rule: "transfers",
    });
    const id = first.approvalId as string;
    // Asking again does not create a second approval; key order of the arguments does not matter.
    const again = await engine.evaluate(
      tool("wire_transfer", { to: "acct-1", amount: 500 }),
      ctxOf(),
    );
    expect(again.approvalId).toBe(id);
    expect(
      (await engine.evaluate(tool("wire_transfer", { amount: 9999, to: "acct-1" }), ctxOf()))
        .approvalId,
    ).not.toBe(id);

    // The approval is a paused run of the engine's approvals queue.
    const run = await engine.approvals.get(id);
    expect(run).toMatchObject({
      status: "paused",
      handlers: ["wire_transfer"],
      userId: "u1",
      pause: {
        key: "$approval",
        kind: "approval",
        answeredBy: { roles: ["manager"], exceptUsers: ["u1"] },
      },
    });
    expect(run?.pause?.prompt).toContain('Tool "wire_transfer" needs approval (rule "transfers")');
    expect(run?.pause?.data["schema"]).toMatchObject({ required: ["decision"] });
    const paused = await engine.approvals.list({ status: "paused" });
    expect(paused.runs.map((r) => r.id)).toContain(id);

    const approvals = engine.approvals;
    const stranger = ExecContext.create({ userId: "u9" });
    await expect(
      approvals.resume(id, { decision: "approve" }, { ctx: stranger }),
    ).rejects.toMatchObject({ code: ErrorCode.PERMISSION_DENIED });
    const selfManager = ctxOf({ permissions: { roles: ["manager"] } });
    await expect(
      approvals.resume(id, { decision: "approve" }, { ctx: selfManager }),
    ).rejects.toMatchObject({
      code: ErrorCode.PERMISSION_DENIED,
      message: expect.stringMatching(/self-approval/),
    });
    const bad = await rejection(approvals.resume(id, { decision: "yes" }, { ctx: manager() }));
    expect(bad.code).toBe(ErrorCode.INVALID_INPUT);
    expect(bad.issues?.[0]?.path).toBe("value.decision");
    // Every refusal came before anything changed.
    expect((await approvals.get(id))?.status).toBe("paused");
    expect(await engine.approval(id, stranger)).toBeNull();
    expect((await engine.approval(id, ctxOf()))?.status).toBe("pending");

    await approvals.resume(id, { decision: "approve", note: "fine" }, { ctx: manager() });
    expect(await engine.approval(id, manager())).toMatchObject({
      status: "approved",
      decidedBy: "boss",
      note: "fine",
    });
    const twice = await rejection(
      approvals.resume(id, { decision: "approve" }, { ctx: manager() }),
    );
    expect(twice.code).toBe(ErrorCode.INVALID_STATE);
    // Another user's identical attempt does not match this approval.
    expect(
      (await engine.evaluate(tool("wire_transfer", args), ctxOf({ userId: "u2" }))).effect,
    ).toBe("pending");
    const request = ctxOf();
    const through = await engine.evaluate(tool("wire_transfer", args), request);
    expect(through).toMatchObject({
      effect: "allow",
      reason: "approved by boss",
      rule: "transfers",
    });
    // Checked again within the same request (say by a runtime hook), the approval still holds.
    expect((await engine.evaluate(tool("wire_transfer", args), request.fork())).effect).toBe(
      "allow",
    );
    // Used once: the run ended with the decision, and the next attempt needs a new approval.
    expect(await approvals.get(id)).toMatchObject({
      status: "succeeded",
      result: { data: { decision: "approve", decidedBy: "boss", note: "fine" } },
    });
    expect((await engine.approval(id, ctxOf()))?.status).toBe("used");
    const next = await engine.evaluate(tool("wire_transfer", args), ctxOf());
    expect(next.effect).toBe("pending");
    expect(next.approvalId).not.toBe(id);
  });

  it("reports a denied approval once, skips exempt roles and expires old approvals", async () => {
    const time = { now: Date.now() };
    const engine = new DeclarativePolicyEngine(doc, { clock: () => time.now });
    const pending = await engine.evaluate(invoke("admin_agent", "reset db"), ctxOf());
    await engine.approvals.resume(
      pending.approvalId as string,
      { decision: "deny", note: "not today" },
      { ctx: manager() },
    );
    expect((await engine.approval(pending.approvalId as string, ctxOf()))?.status).toBe("denied");
    expect(await engine.evaluate(invoke("admin_agent", "reset db"), ctxOf())).toMatchObject({
      effect: "deny",
      code: ErrorCode.POLICY_DENIED,
      reason: 'Approval "' + pending.approvalId + '" was denied by boss: not today.',
    });
    expect((await engine.evaluate(invoke("admin_agent", "reset db"), ctxOf())).effect).toBe(
      "pending",
    );
    const root = ctxOf({ permissions: { roles: ["root"] } });
    expect((await engine.evaluate(invoke("admin_agent", "reset db"), root)).effect).toBe("allow");

    // Approved, but not used within ttlSeconds: the next attempt asks anew, and the old one is
    // cancelled so it leaves the paused and pending lists.
    const old = await engine.evaluate(invoke("admin_agent", "later"), ctxOf());
    const oldId = old.approvalId as string;
    await engine.approvals.resume(oldId, { decision: "approve" }, { ctx: manager() });
    time.now += 61_000;
    expect((await engine.approval(oldId, ctxOf()))?.status).toBe("expired");
    const fresh = await engine.evaluate(invoke("admin_agent", "later"), ctxOf());
    expect(fresh.effect).toBe("pending");
    expect(fresh.approvalId).not.toBe(oldId);
    expect((await engine.approvals.get(oldId))?.status).toBe("cancelled");
  });

  it("refuses to decide an approval once it expired, changing nothing", async () => {
    const engine = new DeclarativePolicyEngine({
      version: 1,
      approvals: [
        { name: "quick", kind: "tool", names: ["t"], approverRoles: ["manager"], ttlSeconds: 0.05 },
      ],
    });
    const pending = await engine.evaluate(tool("t"), ctxOf());
    const id = pending.approvalId as string;
    await new Promise((r) => setTimeout(r, 80));
    const late = await rejection(
      engine.approvals.resume(id, { decision: "approve" }, { ctx: manager() }),
    );
    expect(late.code).toBe(ErrorCode.INVALID_STATE);
    expect(late.message).toMatch(/expired at .*its requester must ask again/);
    expect((await engine.approvals.get(id))?.status).toBe("paused");
    expect((await engine.approval(id, ctxOf()))?.status).toBe("expired");
  });

  it("takes only a RunQueue whose store can finish pending runs", () => {
    const err = (() => {
      try {
        new DeclarativePolicyEngine(doc, { approvals: {} as never });
      } catch (e) {
        return e as NervaError;
      }
      return null;
    })();
    expect(err?.code).toBe(ErrorCode.INVALID_OPTIONS);
    expect(err?.message).toMatch(/approvals/);
  });
});
