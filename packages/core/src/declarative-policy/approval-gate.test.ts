import { afterEach, describe, expect, it } from "vitest";
import { ExecContext, type ExecContextOptions } from "../context/exec-context.js";
import { ErrorCode } from "../errors.js";
import { Orchestrator } from "../orchestrator/orchestrator.js";
import { RuleRouter } from "../router/rule-router.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { RunQueue } from "../runs/run-queue.js";
import { storeBackends } from "../runs/store-backends.test-support.js";
import { rejection } from "../testing/rejection.js";
import { DeclarativePolicyEngine } from "./declarative-engine.js";
import type { PolicyAction } from "../policy/types.js";

const runtimes: InProcessRuntime[] = [];
afterEach(async () => {
  for (const r of runtimes.splice(0)) await r.close();
});

const transfer: PolicyAction = {
  checkpoint: "during_execution",
  kind: "tool",
  name: "wire_transfer",
  args: { amount: 900 },
};
const engine = () =>
  new DeclarativePolicyEngine({
    version: 1,
    approvals: [
      { name: "transfers", kind: "tool", names: ["wire_transfer"], approverRoles: ["manager"] },
      { name: "deletion", kind: "agent", names: ["delete_agent"], approverRoles: ["manager"] },
    ],
  });
const as = (o: ExecContextOptions) => ExecContext.create(o);
const manager = () => as({ userId: "boss", permissions: { roles: ["manager"] } });

describe("approvals are bound to the requester", () => {
  it("binds an anonymous request's approval to its session: another anonymous caller cannot use it", async () => {
    const policy = engine();
    const pending = await policy.evaluate(transfer, as({ sessionId: "sess-a" }));
    expect(pending.effect).toBe("pending");
    await policy.approvals.resume(
      pending.approvalId as string,
      { decision: "approve" },
      { ctx: manager() },
    );

    // The same action from another anonymous session does not match: it waits for its own.
    const other = await policy.evaluate(transfer, as({ sessionId: "sess-b" }));
    expect(other.effect).toBe("pending");
    expect(other.approvalId).not.toBe(pending.approvalId);
    // Nor does a signed-in user who happens to send the same action.
    expect(
      (await policy.evaluate(transfer, as({ userId: "u9", sessionId: "sess-a" }))).effect,
    ).toBe("pending");

    const mine = await policy.evaluate(transfer, as({ sessionId: "sess-a" }));
    expect(mine).toMatchObject({ effect: "allow", reason: "approved by boss" });
    expect((await policy.evaluate(transfer, as({ sessionId: "sess-a" }))).effect).toBe("pending");
  });

  it("shows and resumes an anonymous session's approval for that session only", async () => {
    const policy = engine();
    let deleted = 0;
    const runtime = new InProcessRuntime().register("delete_agent", async () => {
      deleted++;
      return "deleted";
    });
    runtimes.push(runtime);
    const o = new Orchestrator({
      router: new RuleRouter({ rules: [], defaultHandler: "delete_agent" }),
      runtime,
      policy,
    });
    const asked = await rejection(o.handle("delete everything", as({ sessionId: "sess-a" })));
    expect(asked.code).toBe(ErrorCode.APPROVAL_PENDING);
    const id = asked.details["approvalId"] as string;
    await policy.approvals.resume(id, { decision: "approve" }, { ctx: manager() });

    expect(await policy.approval(id, as({ sessionId: "sess-b" }))).toBeNull();
    expect((await rejection(o.handleApproved(id, as({ sessionId: "sess-b" })))).code).toBe(
      ErrorCode.NOT_FOUND,
    );
    expect(
      (await rejection(o.handleApproved(id, as({ userId: "u1", sessionId: "sess-a" })))).code,
    ).toBe(ErrorCode.NOT_FOUND);
    expect(deleted).toBe(0);
    expect((await o.handleApproved(id, as({ sessionId: "sess-a" }))).text).toBe("deleted");
    expect(deleted).toBe(1);
  });

  it("refuses a gated action of a request with neither user nor session, creating no approval", async () => {
    const policy = engine();
    const refused = await policy.evaluate(transfer, as({}));
    expect(refused).toMatchObject({
      effect: "deny",
      code: ErrorCode.POLICY_DENIED,
      rule: "transfers",
    });
    expect(refused.reason).toContain("this request has neither");
    expect(refused.reason).toContain("Give the context a userId or a sessionId");
    expect((await policy.approvals.list()).runs).toEqual([]);
  });

  it("does not let an anonymous session decide its own request", async () => {
    const policy = engine();
    const pending = await policy.evaluate(transfer, as({ sessionId: "sess-a" }));
    const self = as({ sessionId: "sess-a", permissions: { roles: ["manager"] } });
    const err = await rejection(
      policy.approvals.resume(pending.approvalId as string, { decision: "approve" }, { ctx: self }),
    );
    expect(err.code).toBe(ErrorCode.PERMISSION_DENIED);
    expect(err.message).toContain("session sess-a, who asked for it");
    // Another anonymous session holding the role may decide it.
    const other = as({ sessionId: "sess-z", permissions: { roles: ["manager"] } });
    await policy.approvals.resume(
      pending.approvalId as string,
      { decision: "approve" },
      { ctx: other },
    );
    expect((await policy.evaluate(transfer, as({ sessionId: "sess-a" }))).effect).toBe("allow");
  });
});

describe.each(storeBackends("approval-gate"))("approvals on a %s run store", (_name, open) => {
  it("lets a burst of retries use one approval once, and asks anew for the rest", async () => {
    const approvals = new RunQueue({ store: open(), name: "approvals" });
    try {
      const policy = new DeclarativePolicyEngine(engine().document, { approvals });
      const pending = await policy.evaluate(transfer, as({ userId: "u1" }));
      const id = pending.approvalId as string;
      await approvals.resume(id, { decision: "approve" }, { ctx: manager() });
      const burst = await Promise.all(
        Array.from({ length: 8 }, () => policy.evaluate(transfer, as({ userId: "u1" }))),
      );
      expect(burst.filter((d) => d.effect === "allow")).toHaveLength(1);
      expect(burst.filter((d) => d.effect === "pending")).toHaveLength(7);
      expect(burst.every((d) => d.approvalId !== id)).toBe(true);
      const events = [];
      for await (const e of approvals.events(id)) events.push(e.type);
      expect(events).toEqual(["run.enqueued", "run.paused", "run.resumed", "run.succeeded"]);
    } finally {
      await approvals.store.close();
    }
  });

  it("refuses every bad decision before the approval changes", async () => {
    const approvals = new RunQueue({ store: open(), name: "approvals" });
    try {
      const policy = new DeclarativePolicyEngine(engine().document, { approvals });
      const id = (await policy.evaluate(transfer, as({ userId: "u1" }))).approvalId as string;
      const refusals = [
        approvals.resume(id, { decision: "approve" }),
        approvals.resume(id, { decision: "approve" }, { ctx: as({ userId: "u2" }) }),
        approvals.resume(
          id,
          { decision: "approve" },
          { ctx: as({ userId: "u1", permissions: { roles: ["manager"] } }) },
        ),
        approvals.resume(id, { decision: "approve", extra: 1 }, { ctx: manager() }),
        approvals.resume(id, "yes", { ctx: manager() }),
      ];
      expect((await Promise.all(refusals.map(rejection))).map((e) => e.code)).toEqual([
        ErrorCode.PERMISSION_DENIED,
        ErrorCode.PERMISSION_DENIED,
        ErrorCode.PERMISSION_DENIED,
        ErrorCode.INVALID_INPUT,
        ErrorCode.INVALID_INPUT,
      ]);
      expect(await approvals.get(id)).toMatchObject({ status: "paused", lastSeq: 2 });
      await approvals.resume(id, { decision: "deny" }, { ctx: manager() });
      expect(
        (await rejection(approvals.resume(id, { decision: "approve" }, { ctx: manager() }))).code,
      ).toBe(ErrorCode.INVALID_STATE);
    } finally {
      await approvals.store.close();
    }
  });
});
