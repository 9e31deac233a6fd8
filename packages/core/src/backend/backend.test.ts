// One call puts an app's shared state somewhere: the embedded backend (this process), SQLite (one
// file, every process on the machine) and Redis (every replica). The same checks run on each, and
// the Redis one is then used by two "replicas" (two orchestrators on two backends).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { ErrorCode, isNervaError } from "../errors.js";
import { Orchestrator } from "../orchestrator/orchestrator.js";
import { REDIS_URL, dropPrefixes, testPrefix } from "../runs/redis/redis.test-support.js";
import { RuleRouter } from "../router/rule-router.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import type { PolicyDocumentInit } from "../policy/document.js";
import type { Backend } from "./backend.js";
import { embeddedBackend } from "./embedded-backend.js";
import { redisBackend } from "./redis-backend.js";
import { sqliteBackend } from "./sqlite-backend.js";

const dir = mkdtempSync(join(tmpdir(), "nerva-backend-"));
const prefixes: string[] = [];
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await dropPrefixes(prefixes);
});

const document: PolicyDocumentInit = {
  version: 1,
  rateLimits: [{ name: "per-user", per: "user", limit: 4, windowSeconds: 60 }],
  approvals: [
    { name: "refunds", kind: "agent", names: ["refund_agent"], approverRoles: ["approver"] },
  ],
};

/** One replica of a small app built from `backend` alone. */
function app(backend: Backend): Orchestrator {
  const runtime = new InProcessRuntime();
  const orchestrator = new Orchestrator({
    runtime,
    memory: backend.memory(),
    registry: backend.registry,
    policy: backend.policy(document),
    router: new RuleRouter({
      rules: [{ handler: "refund_agent", keywords: ["refund"] }],
      defaultHandler: "notes_agent",
    }),
  });
  runtime.register("refund_agent", async () => "refunded");
  runtime.register(
    "notes_agent",
    orchestrator.handler(async (input, _ctx, kit) => {
      const { hot } = await kit.memory.recall({ tiers: ["hot"] });
      return `${hot.filter((t) => t.role === "user").length} earlier: ${input.message}`;
    }),
  );
  return orchestrator;
}

const kinds: [string, () => [Backend, Backend]][] = [
  [
    "embedded",
    () => {
      const b = embeddedBackend();
      return [b, b];
    },
  ],
  [
    "sqlite",
    () => {
      const path = join(dir, `${Math.random().toString(36).slice(2)}.db`);
      return [sqliteBackend({ path }), sqliteBackend({ path })];
    },
  ],
  [
    "redis",
    () => {
      const prefix = testPrefix("backend");
      prefixes.push(prefix);
      return [redisBackend({ url: REDIS_URL, prefix }), redisBackend({ url: REDIS_URL, prefix })];
    },
  ],
];

describe.each(kinds)("%s backend", (kind, open) => {
  it("gives runs, memory, policy and approvals that two replicas share", async () => {
    const [one, two] = open();
    const [a, b] = [app(one), app(two)];
    try {
      expect(one.kind).toBe(kind === "embedded" ? "memory" : kind);
      expect(one.queue("runs")).toBe(one.queue("runs"));
      const ctx = () => ExecContext.create({ userId: "ada", sessionId: "s1" });

      // Memory: the second replica sees the first one's turn.
      expect((await a.handle("hello", ctx())).text).toBe("0 earlier: hello");
      expect((await b.handle("again", ctx())).text).toBe("1 earlier: again");

      // Approvals: asked on one replica, a paused run of the backend's "approvals" queue that the
      // other lists, decides and the requester then uses there.
      const asked = await a.handle("refund please", ctx()).catch((e: unknown) => e);
      expect(isNervaError(asked) && asked.code).toBe(ErrorCode.APPROVAL_PENDING);
      const approvalId = (asked as { details: { approvalId: string } }).details.approvalId;
      const { runs } = await two.queue("approvals").list({ status: "paused" });
      expect(runs.map((r) => r.id)).toContain(approvalId);
      const approver = ExecContext.create({ userId: "bob", permissions: { roles: ["approver"] } });
      await two.queue("approvals").resume(approvalId, { decision: "approve" }, { ctx: approver });
      expect((await b.handleApproved(approvalId, ctx())).text).toBe("refunded");

      // Rate limit: 4 per user, and ada has made 4 requests (2 on each replica). Counted for both
      // replicas together, except on SQLite, whose limits stay in each process.
      const fifth = await b.handle("one more", ctx()).catch((e: unknown) => e);
      if (kind === "sqlite") expect((fifth as { text: string }).text).toBe("3 earlier: one more");
      else expect(isNervaError(fifth) && fifth.code).toBe(ErrorCode.RATE_LIMITED);

      // Graphs' shared state: written through one, read through the other (SQLite keeps it in
      // each process).
      await one.sharedState.set("orders", "handled", 3);
      expect(await two.sharedState.get("orders", "handled")).toBe(
        kind === "sqlite" ? undefined : 3,
      );

      // Runs: enqueued through one, read through the other.
      const run = await one.queue("runs").enqueue({ handler: "x", input: { message: "m" } });
      expect((await two.queue("runs").get(run.id))?.status).toBe("pending");
    } finally {
      // The orchestrators close memory and registry; the backends then close the rest, and a
      // second close of the same backend is harmless.
      await a.close();
      await b.close();
      await one.close();
      await two.close();
      await one.close();
    }
  });
});

describe("redisBackend", () => {
  it("puts each part under its own prefix and leaves a client it was given open", async () => {
    const prefix = testPrefix("backend-client");
    prefixes.push(prefix);
    const client = new Redis(REDIS_URL);
    const backend = redisBackend({ client, prefix });
    try {
      const ctx = ExecContext.create({ userId: "ada", sessionId: "s1" });
      const memory = backend.memory();
      await memory.store({ kind: "fact", key: "name", content: "Ada" }, ctx);
      await backend.queue("runs").enqueue({ handler: "x", input: { message: "m" } });
      const keys = await client.keys(`${prefix}:*`);
      expect(keys.some((k) => k.startsWith(`${prefix}:memory:`))).toBe(true);
      expect(keys.some((k) => k.startsWith(`${prefix}:run:`))).toBe(true);
    } finally {
      await backend.close();
    }
    expect(await client.ping()).toBe("PONG");
    client.disconnect();
  });

  it("refuses bad options with INVALID_OPTIONS naming the field", () => {
    const client = new Redis(REDIS_URL, { lazyConnect: true });
    for (const [options, field] of [
      [{ prefix: "app:" }, "prefix"],
      [{ prefix: "has space" }, "prefix"],
      [{ url: REDIS_URL, client }, "client"],
      [{ timeoutSeconds: 0 }, "timeoutSeconds"],
    ] as const) {
      const err = (() => {
        try {
          redisBackend(options as never);
        } catch (e) {
          return e;
        }
      })();
      expect(isNervaError(err) && err.code).toBe(ErrorCode.INVALID_OPTIONS);
      expect((err as Error).message).toContain(field);
    }
    client.disconnect();
  });

  it("fails closed while Redis cannot be reached: a policy check is UNAVAILABLE, not a pass", async () => {
    const backend = redisBackend({ url: "redis://127.0.0.1:1", timeoutSeconds: 0.3 });
    const policy = backend.policy(document);
    try {
      const refused = await policy
        .evaluate(
          { checkpoint: "before_route", message: "hi" },
          ExecContext.create({ userId: "ada" }),
        )
        .catch((e: unknown) => e);
      expect(isNervaError(refused) && refused.code).toBe(ErrorCode.UNAVAILABLE);
    } finally {
      await backend.close();
    }
  });
});

describe("sqliteBackend", () => {
  it("refuses options without a path, naming it", () => {
    const err = (() => {
      try {
        sqliteBackend({} as never);
      } catch (e) {
        return e;
      }
    })();
    expect(isNervaError(err) && err.code).toBe(ErrorCode.INVALID_OPTIONS);
    expect((err as Error).message).toContain("path");
  });
});
