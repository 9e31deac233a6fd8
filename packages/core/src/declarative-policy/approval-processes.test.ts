// Approvals across real processes, on SQLite and on Redis: an approval asked in this process is
// seen (listed, read, its events followed) and decided by another process opening the same
// store, and of two processes racing to use one approval exactly one passes.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import type { PolicyAction } from "../policy/types.js";
import { REDIS_URL, dropPrefixes, testPrefix } from "../runs/redis/redis.test-support.js";
import { RedisRunStore } from "../runs/redis/redis-run-store.js";
import { RunQueue } from "../runs/run-queue.js";
import { SqliteRunStore } from "../runs/sqlite/sqlite-run-store.js";
import type { RunStore } from "../runs/store.js";
import { DeclarativePolicyEngine } from "./declarative-engine.js";

const here = dirname(fileURLToPath(import.meta.url));
const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
const entry = join(here, "approval-process.test-support.ts");
const dir = mkdtempSync(join(tmpdir(), "nerva-approval-procs-"));
const prefixes: string[] = [];
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await dropPrefixes(prefixes);
});

const DOC = {
  version: 1 as const,
  approvals: [
    {
      name: "transfers",
      kind: "tool" as const,
      names: ["wire_transfer"],
      approverRoles: ["manager"],
    },
  ],
};
const transfer: PolicyAction = {
  checkpoint: "during_execution",
  kind: "tool",
  name: "wire_transfer",
  args: { amount: 900 },
};
const alice = () => ExecContext.create({ userId: "alice" });

interface Child {
  readonly lines: Promise<string[]>;
  readonly ready: Promise<void>;
  go(): void;
}

/** Starts the support script with `config`; `lines` resolves with its stdout lines at exit. */
function child(config: Record<string, unknown>): Child {
  const proc = spawn(process.execPath, ["--import", tsx, entry], {
    env: { ...process.env, NERVA_TEST_CONFIG: JSON.stringify(config) },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  let onReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (onReady = resolve));
  proc.stdout.on("data", (d: Buffer) => {
    out += d.toString();
    if (out.includes("ready\n")) onReady();
  });
  proc.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const lines = new Promise<string[]>((resolve, reject) =>
    proc.on("exit", (code) =>
      code === 0
        ? resolve(out.split("\n").filter((l) => l !== "" && l !== "ready"))
        : reject(new Error(`child exited ${code}: ${err}`)),
    ),
  );
  lines.catch(() => undefined);
  return { lines, ready, go: () => proc.stdin.end("go\n") };
}

let n = 0;
const backends: [string, () => { store: RunStore; config: Record<string, unknown> }][] = [
  [
    "sqlite",
    () => {
      const path = join(dir, `approvals-${++n}.db`);
      return { store: new SqliteRunStore({ path }), config: { store: "sqlite", path } };
    },
  ],
  [
    "redis",
    () => {
      const prefix = testPrefix("approvals");
      prefixes.push(prefix);
      return {
        store: new RedisRunStore({ url: REDIS_URL, prefix }),
        config: { store: "redis", redisUrl: REDIS_URL, prefix },
      };
    },
  ],
];

describe.each(backends)("approvals across processes on %s", (_name, open) => {
  it("is seen and decided by another process opening the same store", async () => {
    const { store, config } = open();
    try {
      const policy = new DeclarativePolicyEngine(DOC, {
        approvals: new RunQueue({ store, name: "approvals" }),
      });
      const pending = await policy.evaluate(transfer, alice());
      expect(pending.effect).toBe("pending");

      const [line] = await child({ ...config, role: "decide" }).lines;
      const seen = JSON.parse(line as string) as Record<string, unknown>;
      expect(seen).toMatchObject({
        id: pending.approvalId,
        events: ["run.enqueued", "run.paused"],
        selfCode: "PERMISSION_DENIED",
        status: "pending",
      });
      expect(seen["prompt"]).toContain('Tool "wire_transfer" needs approval (rule "transfers")');

      // Decided over there, used here, once.
      expect(await policy.approval(pending.approvalId as string, alice())).toMatchObject({
        status: "approved",
        decidedBy: "boss",
        note: "from afar",
      });
      expect(await policy.evaluate(transfer, alice())).toMatchObject({
        effect: "allow",
        reason: "approved by boss",
      });
      expect((await policy.evaluate(transfer, alice())).effect).toBe("pending");
    } finally {
      await store.close();
    }
  });

  it("lets exactly one of two processes racing use one approval", async () => {
    const { store, config } = open();
    try {
      const approvals = new RunQueue({ store, name: "approvals" });
      const policy = new DeclarativePolicyEngine(DOC, { approvals });
      const pending = await policy.evaluate(transfer, alice());
      const id = pending.approvalId as string;
      const manager = ExecContext.create({ userId: "boss", permissions: { roles: ["manager"] } });
      await approvals.resume(id, { decision: "approve" }, { ctx: manager });

      const racers = [child({ ...config, role: "use" }), child({ ...config, role: "use" })];
      await Promise.all(racers.map((r) => r.ready));
      for (const r of racers) r.go();
      const answers = (await Promise.all(racers.map((r) => r.lines))).map(
        ([l]) => JSON.parse(l as string) as { effect: string; approvalId: string | null },
      );
      expect(answers.map((a) => a.effect).sort()).toEqual(["allow", "pending"]);
      // The loser asks for a new approval; the used one ended once.
      expect(answers.find((a) => a.effect === "pending")?.approvalId).not.toBe(id);
      const events = await store.readEvents(id, 0, 100);
      expect(events.filter((e) => e.type === "run.succeeded")).toHaveLength(1);
      expect((await approvals.get(id))?.status).toBe("succeeded");
    } finally {
      await store.close();
    }
  });
});
