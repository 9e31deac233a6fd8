// A process of the cross-process approval tests: opens the run store named by NERVA_TEST_CONFIG
// and, as `role` says, decides the newest paused approval of the approvals queue as a manager
// ("decide"), or, after "go" on stdin, attempts the gated action as its requester ("use").
// Prints one JSON line with what it saw.
import { ExecContext } from "../context/exec-context.js";
import { RunQueue } from "../runs/run-queue.js";
import { SqliteRunStore } from "../runs/sqlite/sqlite-run-store.js";
import type { RunStore } from "../runs/store.js";
import { DeclarativePolicyEngine } from "./declarative-engine.js";

interface Config {
  store: "sqlite" | "redis";
  path?: string;
  redisUrl?: string;
  prefix?: string;
  role: "decide" | "use";
}

const config = JSON.parse(process.env.NERVA_TEST_CONFIG ?? "{}") as Config;

/** The policy document of these tests (approval-processes.test.ts has the same). */
const APPROVAL_DOC = {
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

async function openStore(): Promise<RunStore> {
  if (config.store === "sqlite") return new SqliteRunStore({ path: config.path as string });
  const { RedisRunStore } = await import("../runs/redis/redis-run-store.js");
  return new RedisRunStore({ url: config.redisUrl as string, prefix: config.prefix as string });
}

async function main(): Promise<void> {
  const store = await openStore();
  const approvals = new RunQueue({ store, name: "approvals" });
  try {
    if (config.role === "decide") {
      const { runs } = await approvals.list({ status: "paused" });
      const run = runs[0];
      if (run === undefined) throw new Error("no paused approval");
      const events: string[] = [];
      for await (const e of approvals.events(run.id, { follow: false })) events.push(e.type);
      // The requester holding the approver role still may not decide their own request.
      const self = ExecContext.create({ userId: "alice", permissions: { roles: ["manager"] } });
      const selfCode = await approvals.resume(run.id, { decision: "approve" }, { ctx: self }).then(
        () => "accepted",
        (err: { code?: string }) => err.code,
      );
      const manager = ExecContext.create({ userId: "boss", permissions: { roles: ["manager"] } });
      await approvals.resume(run.id, { decision: "approve", note: "from afar" }, { ctx: manager });
      process.stdout.write(
        `${JSON.stringify({ id: run.id, prompt: run.pause?.prompt, events, selfCode, status: (await approvals.get(run.id))?.status })}\n`,
      );
      return;
    }
    // Using an approval waits a moment first, so that both racing processes have found it
    // answered and unused before either uses it: which one passes is up to the store alone.
    const slow = new Proxy(store, {
      get(target, prop) {
        if (prop === "finishPending") {
          return async (...args: Parameters<RunStore["finishPending"]>) => {
            await new Promise((r) => setTimeout(r, 300));
            return target.finishPending(...args);
          };
        }
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const policy = new DeclarativePolicyEngine(APPROVAL_DOC, {
      approvals: new RunQueue({ store: slow, name: "approvals" }),
    });
    process.stdout.write("ready\n");
    await new Promise<void>((resolve) => process.stdin.once("data", () => resolve()));
    const decision = await policy.evaluate(
      {
        checkpoint: "during_execution",
        kind: "tool",
        name: "wire_transfer",
        args: { amount: 900 },
      },
      ExecContext.create({ userId: "alice" }),
    );
    process.stdout.write(
      `${JSON.stringify({ effect: decision.effect, approvalId: decision.approvalId ?? null })}\n`,
    );
  } finally {
    await store.close();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
