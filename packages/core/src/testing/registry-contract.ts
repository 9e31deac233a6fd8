import { afterEach, describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { ErrorCode } from "../errors.js";
import type { Registry } from "../registry/types.js";
import { rejection } from "./rejection.js";

/**
 * Builds a fresh, empty registry for one test whose automatic health rule marks an entry
 * unhealthy after `unhealthyAfterFailures` consecutive failures. `reopen` (persistent registries)
 * returns a new registry over the same data, as after a restart.
 */
export type RegistryContractSetup = (options: { unhealthyAfterFailures: number }) => Promise<{
  registry: Registry;
  reopen?: () => Promise<Registry>;
}>;

/**
 * The behaviour every {@link Registry} must show: upserts, permission-filtered discovery, health
 * and running stats. Run it from a vitest file for each implementation.
 *
 * @example
 * describeRegistryContract("InMemoryRegistry", async (o) => ({ registry: new InMemoryRegistry(o) }));
 */
export function describeRegistryContract(
  label: string,
  setup: RegistryContractSetup,
  options: { persistent?: boolean } = {},
): void {
  describe(`registry contract: ${label}`, () => {
    const open: Registry[] = [];
    afterEach(async () => {
      for (const r of open.splice(0)) await r.close();
    });
    const make = async (unhealthyAfterFailures = 2) => {
      const built = await setup({ unhealthyAfterFailures });
      open.push(built.registry);
      return built;
    };
    const admin = () => ExecContext.create({ userId: "admin", permissions: { roles: ["ops"] } });

    it("refuses metadata nested too deep with INVALID_INPUT and registers nothing", async () => {
      const { registry } = await make();
      const ctx = admin();
      const deep: unknown = JSON.parse("[".repeat(20_000) + "]".repeat(20_000));
      const err = await rejection(
        registry.register({ kind: "agent", name: "deep", metadata: { deep } as never }, ctx),
      );
      expect(err.code).toBe(ErrorCode.INVALID_INPUT);
      expect(err.message).toMatch(/^Invalid entry\.metadata: nested deeper than 64 levels/);
      expect(await registry.get("agent", "deep", ctx)).toBeNull();
    });

    it("registers entries and updates them in place on a second register", async () => {
      const { registry } = await make();
      const ctx = admin();
      const first = await registry.register(
        { kind: "agent", name: "flight_agent", description: "Books flights", tags: ["travel"] },
        ctx,
      );
      expect(first).toMatchObject({
        kind: "agent",
        name: "flight_agent",
        description: "Books flights",
        version: null,
        tags: ["travel"],
        requiredRoles: [],
        metadata: {},
        health: "unknown",
        healthDetail: null,
      });
      await registry.recordInvocation("agent", "flight_agent", { ok: true, latencyMs: 5 }, ctx);
      const second = await registry.register(
        {
          kind: "agent",
          name: "flight_agent",
          description: "Books flights and trains",
          version: "2",
        },
        ctx,
      );
      expect(second.description).toBe("Books flights and trains");
      expect(second.version).toBe("2");
      expect(second.registeredAt).toBe(first.registeredAt);
      expect(second.health).toBe("healthy");
      expect((await registry.stats("agent", "flight_agent", ctx))?.count).toBe(1);
      expect(await registry.get("agent", "flight_agent", ctx)).toEqual(second);
      expect(await registry.get("tool", "flight_agent", ctx)).toBeNull();
      expect(Object.isFrozen(second)).toBe(true);
    });

    it("discovers only what the context may use, filtered and ordered by kind then name", async () => {
      const { registry } = await make();
      const ctx = admin();
      await registry.register({ kind: "tool", name: "search", tags: ["travel", "read"] }, ctx);
      await registry.register({ kind: "agent", name: "zeta" }, ctx);
      await registry.register({ kind: "agent", name: "alpha", tags: ["travel"] }, ctx);
      await registry.register({ kind: "tool", name: "refund", requiredRoles: ["ops"] }, ctx);
      await registry.register(
        { kind: "plugin", name: "audit", requiredRoles: ["ops", "sec"] },
        ctx,
      );
      const names = (entries: { kind: string; name: string }[]) =>
        entries.map((e) => `${e.kind}:${e.name}`);

      expect(names(await registry.discover(ctx))).toEqual([
        "agent:alpha",
        "agent:zeta",
        "tool:refund",
        "tool:search",
      ]);
      const limited = ExecContext.create({
        userId: "u1",
        permissions: { allowedAgents: ["alpha"], allowedTools: ["search", "refund"] },
      });
      expect(names(await registry.discover(limited))).toEqual(["agent:alpha", "tool:search"]);
      expect(await registry.get("agent", "zeta", limited)).toBeNull();
      expect(await registry.stats("tool", "refund", limited)).toBeNull();
      expect(names(await registry.discover(ctx, { kind: "tool" }))).toEqual([
        "tool:refund",
        "tool:search",
      ]);
      expect(names(await registry.discover(ctx, { tags: ["travel"] }))).toEqual([
        "agent:alpha",
        "tool:search",
      ]);
      expect(names(await registry.discover(ctx, { tags: ["travel", "read"] }))).toEqual([
        "tool:search",
      ]);
      const both = ExecContext.create({ permissions: { roles: ["ops", "sec"] } });
      expect(names(await registry.discover(both, { kind: "plugin" }))).toEqual(["plugin:audit"]);
      const none = ExecContext.create({ permissions: { allowedAgents: [], allowedTools: [] } });
      expect(await registry.discover(none)).toEqual([]);
    });

    it("keeps running stats: count, failures, mean/min/max latency, last error", async () => {
      const { registry } = await make(0);
      const ctx = admin();
      await registry.register({ kind: "tool", name: "search" }, ctx);
      const empty = await registry.stats("tool", "search", ctx);
      expect(empty).toEqual({
        count: 0,
        failures: 0,
        consecutiveFailures: 0,
        totalLatencyMs: 0,
        meanLatencyMs: 0,
        minLatencyMs: null,
        maxLatencyMs: null,
        lastLatencyMs: null,
        lastInvokedAt: null,
        lastError: null,
      });
      const latencies = [10, 30, 20, 40];
      for (const [i, ms] of latencies.entries()) {
        const ok = i !== 1;
        await registry.recordInvocation(
          "tool",
          "search",
          ok ? { ok, latencyMs: ms } : { ok, latencyMs: ms, error: "upstream 503" },
          ctx,
        );
      }
      const stats = await registry.stats("tool", "search", ctx);
      expect(stats).toMatchObject({
        count: 4,
        failures: 1,
        consecutiveFailures: 0,
        totalLatencyMs: 100,
        meanLatencyMs: 25,
        minLatencyMs: 10,
        maxLatencyMs: 40,
        lastLatencyMs: 40,
        lastError: "upstream 503",
      });
      expect(stats?.lastInvokedAt).toBeGreaterThan(0);
    });

    it("marks an entry unhealthy after consecutive failures and healthy again on success", async () => {
      const { registry } = await make(2);
      const ctx = admin();
      await registry.register({ kind: "agent", name: "a" }, ctx);
      await registry.recordInvocation("agent", "a", { ok: false, latencyMs: 1, error: "x" }, ctx);
      expect((await registry.get("agent", "a", ctx))?.health).toBe("unknown");
      await registry.recordInvocation("agent", "a", { ok: false, latencyMs: 1, error: "y" }, ctx);
      const sick = await registry.get("agent", "a", ctx);
      expect(sick?.health).toBe("unhealthy");
      expect(sick?.healthDetail).toContain("2 consecutive failed invocations");
      expect((await registry.discover(ctx, { health: ["healthy", "unknown"] })).length).toBe(0);
      await registry.recordInvocation("agent", "a", { ok: true, latencyMs: 1 }, ctx);
      expect((await registry.get("agent", "a", ctx))?.health).toBe("healthy");
    });

    it("keeps a manually reported health until someone changes it", async () => {
      const { registry } = await make(1);
      const ctx = admin();
      await registry.register({ kind: "agent", name: "a" }, ctx);
      const set = await registry.setHealth("agent", "a", "unhealthy", ctx, "maintenance");
      expect(set).toMatchObject({ health: "unhealthy", healthDetail: "maintenance" });
      await registry.recordInvocation("agent", "a", { ok: true, latencyMs: 1 }, ctx);
      expect((await registry.get("agent", "a", ctx))?.health).toBe("unhealthy");
      await registry.setHealth("agent", "a", "degraded", ctx);
      await registry.recordInvocation("agent", "a", { ok: true, latencyMs: 1 }, ctx);
      expect((await registry.get("agent", "a", ctx))?.health).toBe("degraded");
    });

    it("refuses unknown entries and invalid arguments, naming the field", async () => {
      const { registry } = await make();
      const ctx = admin();
      const missing = await rejection(
        registry.recordInvocation("agent", "ghost", { ok: true, latencyMs: 1 }, ctx),
      );
      expect(missing.code).toBe(ErrorCode.NOT_FOUND);
      expect(missing.message).toContain('"ghost"');
      expect((await rejection(registry.setHealth("tool", "ghost", "healthy", ctx))).code).toBe(
        ErrorCode.NOT_FOUND,
      );
      const kind = await rejection(registry.register({ kind: "robot" as "agent", name: "r" }, ctx));
      expect(kind.code).toBe(ErrorCode.INVALID_INPUT);
      expect(kind.message).toContain("entry.kind");
      await registry.register({ kind: "tool", name: "t" }, ctx);
      const latency = await rejection(
        registry.recordInvocation("tool", "t", { ok: true, latencyMs: -1 }, ctx),
      );
      expect(latency.message).toContain("record.latencyMs");
      const health = await rejection(registry.setHealth("tool", "t", "fine" as "healthy", ctx));
      expect(health.message).toContain("health");
      expect(await registry.unregister("tool", "t", ctx)).toBe(true);
      expect(await registry.unregister("tool", "t", ctx)).toBe(false);
      expect(await registry.stats("tool", "t", ctx)).toBeNull();
    });

    it("records a registry.* span for each call", async () => {
      const { registry } = await make();
      const ctx = admin();
      await registry.register({ kind: "tool", name: "t" }, ctx);
      await registry.recordInvocation("tool", "t", { ok: true, latencyMs: 1 }, ctx);
      await registry.discover(ctx);
      await rejection(registry.setHealth("tool", "nope", "healthy", ctx));
      expect(ctx.spans.map((s) => [s.name, s.status])).toEqual([
        ["registry.register", "ok"],
        ["registry.record", "ok"],
        ["registry.discover", "ok"],
        ["registry.set_health", "error"],
      ]);
    });

    if (options.persistent === true)
      it("keeps entries, health and stats across a reopen (persistent registries)", async () => {
        const built = await make(5);
        if (built.reopen === undefined) throw new Error(`${label}: persistent setup needs reopen`);
        const ctx = admin();
        await built.registry.register({ kind: "agent", name: "a", metadata: { team: "x" } }, ctx);
        await built.registry.recordInvocation("agent", "a", { ok: true, latencyMs: 7 }, ctx);
        const again = await built.reopen();
        open.push(again);
        expect(await again.get("agent", "a", ctx)).toMatchObject({
          metadata: { team: "x" },
          health: "healthy",
        });
        expect((await again.stats("agent", "a", ctx))?.totalLatencyMs).toBe(7);
      });

    it("refuses use after close", async () => {
      const { registry } = await make();
      await registry.close();
      await expect(registry.discover(admin())).rejects.toThrow(/closed/);
    });
  });
}
