// The component types of the wire spec (HandlerCandidate, ToolStatus, ToolSpec, MemoryTier,
// ComponentKind, HealthStatus, MiddlewareStage), checked on the values the real implementations
// produce: each goes to the wire, validates against its spec file (ajv) and its zod schema, and
// comes back equal. Payloads as Nerva's Python implementation writes them are read into values
// the implementations use. Channel and PolicyDecision: channel-policy.test.ts.
import { ExecContext, FunctionToolManager, RuleRouter, defineTool } from "@nerva/core";
import { HealthStatus, InMemoryRegistry } from "@nerva/core/registry";
import { MiddlewareStage } from "@nerva/core/middleware";
import { TieredMemory } from "@nerva/core/memory";
import {
  componentKindFromWire,
  componentKindToWire,
  handlerCandidateFromWire,
  handlerCandidateToWire,
  healthStatusFromWire,
  healthStatusToWire,
  memoryTierFromWire,
  memoryTierToWire,
  middlewareStageFromWire,
  middlewareStageToWire,
  toolSpecFromWire,
  toolSpecToWire,
  toolStatusFromWire,
  toolStatusToWire,
} from "@nerva/core/wire";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { expectInvalid, expectWireValid, overTheWire, validator } from "./wire-check.js";

describe("HandlerCandidate", () => {
  it("a RuleRouter's candidates validate and come back equal", async () => {
    const router = new RuleRouter({
      rules: [
        { handler: "flight_agent", keywords: ["flight", "fly", "plane"] },
        { handler: "hotel_agent", pattern: "\\bhotels?\\b", score: 0.8 },
      ],
      defaultHandler: "chat_agent",
    });
    const ctx = ExecContext.create({ userId: "u1" });
    const { candidates } = await router.classify("A flight and a hotel in Oslo", ctx);
    expect(candidates.map((c) => c.name)).toEqual(["hotel_agent", "flight_agent", "chat_agent"]);
    for (const candidate of candidates) {
      const wire = handlerCandidateToWire(candidate);
      expectWireValid("HandlerCandidate", wire);
      expect(handlerCandidateFromWire(overTheWire(wire))).toEqual(candidate);
    }
    ctx.dispose();
  });

  it("reads Python's candidates (reason left out when empty) and refuses scores outside [0, 1]", () => {
    expect(handlerCandidateFromWire({ name: "search", score: 0.95 })).toEqual({
      name: "search",
      score: 0.95,
      reason: "",
    });
    expectInvalid(
      () => handlerCandidateFromWire({ name: "search", score: 1.5 }),
      /candidate\.score/,
    );
    // A custom router's out-of-range score is refused on the way out too.
    expectInvalid(
      () => handlerCandidateToWire({ name: "mine", score: 1.2, reason: "" }),
      /candidate\.score/,
    );
  });
});

describe("ToolStatus and ToolSpec", () => {
  const tools = new FunctionToolManager({ timeoutSeconds: 5 })
    .register(
      defineTool({
        name: "add",
        description: "Adds two numbers",
        parameters: z.object({ a: z.number(), b: z.number() }),
        run: ({ a, b }) => a + b,
      }),
    )
    .register(
      defineTool({
        name: "broken",
        description: "Always fails",
        parameters: z.object({}),
        run: () => {
          throw new Error("upstream returned 502");
        },
      }),
    )
    .register(
      defineTool({
        name: "slow",
        description: "Takes longer than its timeout",
        parameters: z.object({}),
        timeoutSeconds: 0.05,
        run: (_args, ctx) =>
          new Promise((resolve) => {
            const timer = setTimeout(resolve, 5_000);
            ctx.signal.addEventListener("abort", () => clearTimeout(timer), { once: true });
          }),
      }),
    );

  it("every tool FunctionToolManager discovers validates as a ToolSpec and comes back equal", async () => {
    const ctx = ExecContext.create();
    const discovered = await tools.discover(ctx);
    expect(discovered.map((t) => t.name)).toEqual(["add", "broken", "slow"]);
    for (const tool of discovered) {
      const wire = toolSpecToWire(tool);
      expectWireValid("ToolSpec", wire);
      expect(wire).not.toHaveProperty("required_permissions");
      expect(toolSpecFromWire(overTheWire(wire))).toEqual(tool);
    }
    ctx.dispose();
  });

  it("the status of every kind of call outcome validates and comes back equal", async () => {
    const ctx = ExecContext.create();
    const denied = ExecContext.create({ permissions: { allowedTools: [] } });
    const results = [
      await tools.call("add", { a: 1, b: 2 }, ctx),
      await tools.call("broken", {}, ctx),
      await tools.call("add", { a: 1, b: 2 }, denied),
      await tools.call("no_such_tool", {}, ctx),
      await tools.call("slow", {}, ctx),
    ];
    denied.dispose();
    const statuses = results.map((r) => r.status);
    // One call of each outcome: together they cover every ToolStatus of the published spec.
    expect(statuses).toEqual(["success", "error", "permission_denied", "not_found", "timeout"]);
    for (const status of statuses) {
      const wire = toolStatusToWire(status);
      expectWireValid("ToolStatus", wire);
      expect(toolStatusFromWire(overTheWire(wire))).toBe(status);
    }
    expectInvalid(() => toolStatusFromWire("denied"), /toolStatus/);
    ctx.dispose();
  });

  it("reads Python's ToolSpecs: roles kept, missing parameters as an empty object schema", () => {
    const python = {
      name: "calendar",
      description: "Manage calendar",
      parameters: { type: "object" },
      required_permissions: ["admin"],
    };
    const tool = toolSpecFromWire(python);
    expect(tool).toEqual({
      name: "calendar",
      description: "Manage calendar",
      parameters: { type: "object" },
      requiredPermissions: ["admin"],
    });
    expect(toolSpecToWire(tool)).toEqual(python);
    expect(toolSpecFromWire({ name: "web_search", description: "Search the web" })).toEqual({
      name: "web_search",
      description: "Search the web",
      parameters: { type: "object", properties: {} },
    });
    // Strict: a camelCase role list must not be dropped and the tool read as unrestricted.
    expectInvalid(
      () => toolSpecFromWire({ name: "x", description: "y", requiredPermissions: ["staff"] }),
      /requiredPermissions/,
    );
  });

  it("parameters nested too deep are a typed error, not a stack overflow", () => {
    let deep: Record<string, unknown> = {};
    const root = deep;
    for (let i = 0; i < 100_000; i++) {
      const next: Record<string, unknown> = {};
      deep["properties"] = next;
      deep = next;
    }
    expectInvalid(
      () => toolSpecFromWire({ name: "deep", description: "", parameters: root }),
      /tool/,
    );
  });
});

describe("MemoryTier", () => {
  it("every tier on the wire is one TieredMemory.recall reads", async () => {
    const memory = new TieredMemory();
    const ctx = ExecContext.create({ userId: "u1", sessionId: "s1", memoryScope: "session" });
    await memory.store({ content: "I want to fly to Berlin", role: "user" }, ctx);
    await memory.store({ kind: "fact", key: "home", content: "Lives in Oslo" }, ctx);
    const read = { hot: 0, warm: 0 };
    for (const wire of ["hot", "warm", "cold"]) {
      expectWireValid("MemoryTier", wire);
      const tier = memoryTierFromWire(wire);
      expect(memoryTierToWire(tier)).toBe(wire);
      const recalled = await memory.recall({ text: "Berlin", tiers: [tier] }, ctx);
      if (tier !== "cold") read[tier] = recalled[tier].length;
    }
    expect(read).toEqual({ hot: 1, warm: 1 });
    expectInvalid(() => memoryTierFromWire("archive"), /memoryTier/);
    await memory.close();
    ctx.dispose();
  });
});

describe("ComponentKind and HealthStatus", () => {
  it("every registry kind and health validates and comes back equal", async () => {
    const registry = new InMemoryRegistry({ unhealthyAfterFailures: 1 });
    const ctx = ExecContext.create({ userId: "ops" });
    await registry.register({ kind: "agent", name: "flight_agent" }, ctx);
    await registry.register({ kind: "tool", name: "search_flights" }, ctx);
    await registry.register({ kind: "plugin", name: "audit" }, ctx);
    await registry.setHealth("agent", "flight_agent", HealthStatus.DEGRADED, ctx, "slow upstream");
    await registry.setHealth("plugin", "audit", HealthStatus.HEALTHY, ctx);
    // One failed invocation: the registry marks the tool unhealthy on its own.
    await registry.recordInvocation("tool", "search_flights", { ok: false, latencyMs: 9 }, ctx);
    await registry.register({ kind: "agent", name: "new_agent" }, ctx);

    const entries = await registry.discover(ctx);
    expect(entries.map((e) => `${e.kind}:${e.name}:${e.health}`)).toEqual([
      "agent:flight_agent:degraded",
      "agent:new_agent:unknown",
      "plugin:audit:healthy",
      "tool:search_flights:unhealthy",
    ]);
    const wireHealth: unknown[] = [];
    for (const entry of entries) {
      const kind = componentKindToWire(entry.kind);
      expectWireValid("ComponentKind", kind);
      expect(componentKindFromWire(overTheWire(kind))).toBe(entry.kind);

      const health = healthStatusToWire(entry.health);
      wireHealth.push(health);
      if (health !== null) expectWireValid("HealthStatus", health);
      // null (unknown) is the field left out; both read back as unknown.
      expect(healthStatusFromWire(health ?? undefined)).toBe(entry.health);
    }
    expect(wireHealth).toEqual(["degraded", null, "healthy", "unavailable"]);

    // Python's "unavailable" filters this registry's unhealthy entries.
    const down = await registry.discover(ctx, { health: [healthStatusFromWire("unavailable")] });
    expect(down.map((e) => e.name)).toEqual(["search_flights"]);
    await registry.close();
    ctx.dispose();
  });

  it("sense, unhealthy and unknown are refused where the other side has no such value", () => {
    expect(validator("ComponentKind")("sense")).toBe(true);
    expectInvalid(() => componentKindFromWire("sense"), /componentKind: "sense"/);
    expectInvalid(() => healthStatusFromWire("unhealthy"), /health/);
    expectInvalid(() => healthStatusFromWire("unknown"), /health/);
    expectInvalid(() => healthStatusToWire("gone" as HealthStatus), /health: "gone"/);
  });
});

describe("MiddlewareStage", () => {
  it("the four stages of the published spec cross the wire unchanged", () => {
    for (const stage of ["before_route", "before_invoke", "after_invoke", "before_respond"]) {
      const wire = middlewareStageToWire(middlewareStageFromWire(stage));
      expectWireValid("MiddlewareStage", wire);
      expect(wire).toBe(stage);
    }
  });

  it("a stage the published spec lacks, or a camelCase name, is a typed error", () => {
    for (const stage of ["after_route", "on_error", "beforeRoute"]) {
      expectInvalid(() => middlewareStageToWire(stage as MiddlewareStage), /middlewareStage/);
    }
    expectInvalid(() => middlewareStageFromWire("after_respond"), /middlewareStage/);
  });

  it("each of the implementation's stages either crosses unchanged or is refused", () => {
    for (const stage of Object.values(MiddlewareStage)) {
      const known = validator("MiddlewareStage")(stage);
      if (known) expect(middlewareStageToWire(stage)).toBe(stage);
      else expectInvalid(() => middlewareStageToWire(stage), /middlewareStage/);
    }
  });
});
