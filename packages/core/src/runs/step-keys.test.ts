// Keys a handler gives to step / waitForInput never meet the keys Nerva derives from them (a key
// used again becomes key#2) or its own `$` keys: a user key with "#" or a leading "$" is refused.
// A real Runner on the in-memory, SQLite and Redis stores.
import { afterEach, describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { isNervaError } from "../errors.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import type { RunContext } from "./run-context.js";
import { RunQueue } from "./run-queue.js";
import { Runner } from "./runner.js";
import type { RunStore } from "./store.js";
import { storeBackends } from "./store-backends.test-support.js";

const open: { store: RunStore; runner: Runner }[] = [];
afterEach(async () => {
  for (const { store, runner } of open.splice(0)) {
    await runner.stop({ graceSeconds: 0 });
    await store.close();
  }
});

const backends = storeBackends("step-keys");

/** Runs `body` as the handler of one run on a fresh store and returns its output. */
async function runOnce(make: () => RunStore, body: (run: RunContext) => Promise<string>) {
  const store = make();
  const runtime = new InProcessRuntime().register("h", (_input, ctx) => body(ctx.run!));
  const queue = new RunQueue({ store, name: "keys" });
  const runner = new Runner({ queue, runtime, leaseSeconds: 5, heartbeatSeconds: 1 });
  open.push({ store, runner });
  await runner.start();
  const run = await queue.enqueue({
    handler: "h",
    input: { message: "x" },
    ctx: ExecContext.create(),
  });
  const done = await queue.wait(run.id, { timeoutSeconds: 20 });
  expect(done.status).toBe("succeeded");
  return done.result?.output;
}

/** The code and message of what `p` rejects with (or "resolved"). */
async function refusal(p: Promise<unknown>): Promise<string> {
  return p.then(
    () => "resolved",
    (e: unknown) => (isNervaError(e) ? `${e.code}: ${e.message}` : `thrown: ${String(e)}`),
  );
}

describe.each(backends)("user step and input keys on %s", (_name, make) => {
  it('refuses step("k#2"), so the second step("k") runs its own body', async () => {
    const bodies: string[] = [];
    const output = await runOnce(make, async (run) => {
      const refused = await refusal(run.step("k#2", () => "user's k#2"));
      const first = await run.step("k", () => (bodies.push("first"), "one"));
      const second = await run.step("k", () => (bodies.push("second"), "two"));
      return JSON.stringify({ refused, first, second });
    });
    const seen = JSON.parse(output ?? "{}") as Record<string, string>;
    expect(seen.refused).toMatch(/^INVALID_INPUT: Invalid step key "k#2": .*without "#"/);
    expect([seen.first, seen.second]).toEqual(["one", "two"]);
    expect(bodies).toEqual(["first", "second"]);
  });

  it("refuses a step key in the $ namespace Nerva's own keys use", async () => {
    const output = await runOnce(make, (run) => refusal(run.step("$chain/0", () => 1)));
    expect(output).toMatch(/^INVALID_INPUT: Invalid step key "\$chain\/0"/);
  });

  it('refuses waitForInput("ask#2") before pausing, the name the second "ask" gets', async () => {
    const output = await runOnce(make, (run) => refusal(run.waitForInput("ask#2")));
    expect(output).toMatch(/^INVALID_INPUT: Invalid input key "ask#2": .*without "#"/);
  });
});
