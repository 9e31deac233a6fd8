// Channel and PolicyDecision of the wire spec, checked on the values ChannelResponder and
// DeclarativePolicyEngine work with: each goes to the wire, validates against its spec file (ajv)
// and its zod schema, and comes back equal. Payloads as Nerva's Python implementation writes
// them are read failing closed.
import { ChannelResponder } from "@nerva/core/responder";
import { DeclarativePolicyEngine, decisionError, type PolicyDecision } from "@nerva/core/policy";
import { ErrorCode, ExecContext, agentResult } from "@nerva/core";
import {
  channelFromWire,
  channelToWire,
  policyDecisionFromWire,
  policyDecisionToWire,
  type NamedChannel,
} from "@nerva/core/wire";
import { describe, expect, it } from "vitest";
import { expectInvalid, expectWireValid, overTheWire } from "./wire-check.js";

describe("Channel", () => {
  const responder = new ChannelResponder({ channels: { sms: { format: "plain", maxLength: 80 } } });
  const channels: NamedChannel[] = [
    { name: "sms", spec: { format: "plain", maxLength: 80 }, supportsMedia: false },
    { name: "markdown", spec: { format: "markdown", maxLength: null }, supportsMedia: false },
    { name: "plain", spec: { format: "plain", maxLength: null }, supportsMedia: true },
  ];

  it("a responder's channels validate, come back equal, and format the same", async () => {
    const ctx = ExecContext.create();
    const result = agentResult("writer", { output: `# Title\n\n**Bold** ${"word ".repeat(40)}` });
    for (const channel of channels) {
      const wire = channelToWire(channel);
      expectWireValid("Channel", wire);
      const back = channelFromWire(overTheWire(wire));
      expect(back).toEqual(channel);
      const byName = await responder.format(result, channel.name, ctx);
      const bySpec = await responder.format(result, back.spec, ctx);
      expect(bySpec.text).toBe(byName.text);
      expect(bySpec.truncated).toBe(byName.truncated);
    }
    ctx.dispose();
  });

  it("reads Python's channels with the published defaults", () => {
    expect(channelFromWire({ name: "api" })).toEqual({
      name: "api",
      spec: { format: "markdown", maxLength: null },
      supportsMedia: false,
    });
    const api = { name: "api", supports_markdown: false, supports_media: true, max_length: 0 };
    expect(channelFromWire(api)).toEqual({
      name: "api",
      spec: { format: "plain", maxLength: null },
      supportsMedia: true,
    });
    expect(channelToWire(channelFromWire(api))).toEqual(api);
    expectInvalid(() => channelFromWire({ name: "sms", max_length: -1 }), /channel\.max_length/);
  });
});

describe("PolicyDecision", () => {
  async function decisions(): Promise<PolicyDecision[]> {
    const policy = new DeclarativePolicyEngine({
      version: 1,
      rules: [
        {
          name: "refunds-need-staff",
          effect: "deny",
          kind: "tool",
          names: ["issue_refund"],
          reason: "Only staff may issue refunds.",
        },
      ],
      approvals: [
        {
          name: "deletion",
          kind: "agent",
          names: ["delete_account_agent"],
          approverRoles: ["manager"],
        },
      ],
      rateLimits: [{ name: "per-user", per: "user", limit: 1, windowSeconds: 60 }],
    });
    const alice = () => ExecContext.create({ userId: "alice" });
    return [
      await policy.evaluate({ checkpoint: "before_route", message: "hi" }, alice()),
      await policy.evaluate({ checkpoint: "before_route", message: "again" }, alice()),
      await policy.evaluate(
        { checkpoint: "during_execution", kind: "tool", name: "issue_refund", args: {} },
        alice(),
      ),
      await policy.evaluate(
        { checkpoint: "before_invoke", kind: "agent", name: "flight_agent", message: "x" },
        ExecContext.create({ userId: "bob", permissions: { allowedAgents: [] } }),
      ),
      await policy.evaluate(
        { checkpoint: "before_invoke", kind: "agent", name: "delete_account_agent", message: "x" },
        alice(),
      ),
    ];
  }

  it("every kind of decision validates, comes back equal, and refuses with the same error", async () => {
    const all = await decisions();
    expect(all.map((d) => `${d.effect}:${d.code}`)).toEqual([
      "allow:null",
      "deny:RATE_LIMITED",
      "deny:POLICY_DENIED",
      "deny:PERMISSION_DENIED",
      "pending:APPROVAL_PENDING",
    ]);
    for (const decision of all) {
      const wire = policyDecisionToWire(decision);
      expectWireValid("PolicyDecision", wire);
      // A reader that looks only at `allowed` lets through the allow, and nothing else.
      expect(wire.allowed).toBe(decision.effect === "allow");
      const back = policyDecisionFromWire(overTheWire(wire), "before_invoke");
      expect(back).toEqual(decision);
      if (decision.effect !== "allow") {
        const [sent, got] = [decisionError(decision), decisionError(back)];
        expect([got.code, got.message, got.details]).toEqual([
          sent.code,
          sent.message,
          sent.details,
        ]);
      }
    }
    expect(all[1]?.retryAfterSeconds).toBeGreaterThan(0);
    expect(all[4]?.approvalId).toMatch(/./);
  });

  it("reads Python's decisions failing closed: an approval written as allowed: true is pending", () => {
    const approval = policyDecisionFromWire(
      {
        allowed: true,
        reason: "agent 'deploy_agent' requires approval",
        require_approval: true,
        approvers: ["admin"],
        budget_remaining: null,
      },
      "before_invoke",
    );
    expect(approval).toMatchObject({
      effect: "pending",
      code: ErrorCode.APPROVAL_PENDING,
      checkpoint: "before_invoke",
      approvers: ["admin"],
    });
    expect(decisionError(approval).code).toBe(ErrorCode.APPROVAL_PENDING);

    const denied = policyDecisionFromWire(
      { allowed: false, reason: null, budget_remaining: 0 },
      "before_route",
    );
    expect(denied).toMatchObject({
      effect: "deny",
      code: ErrorCode.POLICY_DENIED,
      reason: "denied by policy",
      rule: null,
      budgetRemaining: 0,
    });
    expect(policyDecisionFromWire({ allowed: true }, "before_route")).toEqual({
      effect: "allow",
      checkpoint: "before_route",
      code: null,
      reason: "",
      rule: null,
    });
    expectInvalid(
      () => policyDecisionFromWire({ allowed: true, requireApproval: true }, "before_route"),
      /requireApproval/,
    );
    expectInvalid(
      () =>
        policyDecisionToWire({
          effect: "deny",
          checkpoint: "before_route",
          code: ErrorCode.INTERNAL,
          reason: "boom",
          rule: null,
        }),
      /decision\.code/,
    );
  });
});
