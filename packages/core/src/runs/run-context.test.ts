// How a worker writes a step's start: with its commit when the step ends within the turn of the
// event loop it began in, on its own as soon as the step waits on I/O or a timer, and always
// before any other write, so the history keeps the order things happened in. Run against the
// real stores, each wrapped to record which writes it was asked for.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { InMemoryRunStore } from "./memory/in-memory-store.js";
import { DEFAULT_MAX_STEP_BYTES } from "./json-value.js";
import { ActiveRun, RunPaused } from "./run-context.js";
import { RunQueue } from "./run-queue.js";
import { SqliteRunStore } from "./sqlite/sqlite-run-store.js";
import type { RunStore } from "./store.js";

const dir = mkdtempSync(join(tmpdir(), "nerva-run-context-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const WRITES = new Set(["append", "commitStep", "commitStartedStep", "checkpoint", "pause"]);

/** `store`, recording the name of each write it is asked for. */
function recorded(store: RunStore): { store: RunStore; writes: string[] } {
  const writes: string[] = [];
  const proxy = new Proxy(store, {
    get(target, name, receiver) {
      const value: unknown = Reflect.get(target, name, receiver);
      if (typeof value !== "function" || typeof name !== "string") return value;
      return (...args: unknown[]) => {
        if (WRITES.has(name)) writes.push(name);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store: proxy, writes };
}

const stores: RunStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
});
let n = 0;
const backends: [string, () => RunStore][] = [
  ["InMemoryRunStore", () => new InMemoryRunStore()],
  ["SqliteRunStore", () => new SqliteRunStore({ path: join(dir, `ctx-${++n}.db`) })],
];

/** The next run of `real` claimed by `workerId`, as the Runner hands it to a handler (on `store`). */
async function execution(store: RunStore, real: RunStore, workerId: string): Promise<ActiveRun> {
  const claimed = await real.claim({ queue: "ctx", workerId, leaseSeconds: 30, waitSeconds: 0 });
  if (claimed === null) throw new Error("nothing to claim");
  return new ActiveRun(store, claimed, DEFAULT_MAX_STEP_BYTES);
}

/** A claimed run of a fresh store, as the Runner hands it to a handler. */
async function activeRun(make: () => RunStore) {
  const real = make();
  stores.push(real);
  const { store, writes } = recorded(real);
  const queue = new RunQueue({ store: real, name: "ctx" });
  const { id } = await queue.enqueue({
    handler: "h",
    input: { message: "x" },
    ctx: ExecContext.create(),
  });
  const run = await execution(store, real, "w");
  const history = async () =>
    (await real.readEvents(id, 2, 1000)).map((e) =>
      e.type.startsWith("step.") ? `${e.type} ${String(e.data.key)}` : e.type,
    );
  return { run, writes, history, real, id };
}

describe.each(backends)("step starts and commits on %s", (_label, make) => {
  it("writes a step that ends within its turn with its start, in one write", async () => {
    const { run, writes, history, real, id } = await activeRun(make);
    const before = Date.now();
    expect(await run.step("quick", () => ({ n: 1 }))).toEqual({ n: 1 });
    expect(writes).toEqual(["commitStartedStep"]);
    expect(await history()).toEqual(["step.started quick", "step.completed quick"]);
    const [started, completed] = await real.readEvents(id, 2, 2);
    expect(started?.at).toBeGreaterThanOrEqual(before);
    expect(started?.at).toBeLessThanOrEqual(completed?.at as number);
  });

  it("writes the start of a step that waits on a timer before it ends, so a tail sees it begin", async () => {
    const { run, writes, history } = await activeRun(make);
    let seenWhileRunning: string[] = [];
    await run.step("slow", async () => {
      await sleep(30);
      seenWhileRunning = await history();
      return 1;
    });
    expect(seenWhileRunning).toEqual(["step.started slow"]);
    expect(writes).toEqual(["append", "commitStep"]);
    expect(await history()).toEqual(["step.started slow", "step.completed slow"]);
  });

  it("writes a start before any other write of the run: events, nested steps, checkpoints", async () => {
    const { run, history } = await activeRun(make);
    await run.step("outer", async () => {
      await run.emit("app.note", { a: 1 });
      await run.step("inner", () => "i");
      await run.checkpoint({ at: "inner" });
      return "o";
    });
    expect(await history()).toEqual([
      "step.started outer",
      "app.note",
      "step.started inner",
      "step.completed inner",
      "run.checkpoint",
      "step.completed outer",
    ]);
  });

  it("keeps the start of a step that failed or paused, and commits nothing for it", async () => {
    const { run, history } = await activeRun(make);
    await expect(
      run.step("boom", () => {
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    await expect(run.step("bad", () => ({ when: new Date(0) }))).rejects.toMatchObject({
      code: "INVALID_INPUT",
    });
    await expect(run.step("ask", () => run.waitForInput("go"))).rejects.toBeInstanceOf(RunPaused);
    expect(await history()).toEqual([
      "step.started boom",
      "step.started bad",
      "step.started ask",
      "run.paused",
    ]);
  });
});

describe.each(backends)("marks on %s", (_label, make) => {
  it("numbers the uses of a mark, looks without taking one, and finds those made before", async () => {
    const { run, real, history } = await activeRun(make);
    expect(run.nextMark("$rate/w", false)).toBe("$rate/w");
    expect(run.nextMark("$rate/w", false)).toBe("$rate/w"); // looking takes no use
    expect(run.nextMark("$rate/w", true)).toBe("$rate/w");
    expect(run.nextMark("$rate/w", true)).toBe("$rate/w#2");
    await run.mark("$rate/w");
    expect(await history()).toEqual(["step.started $rate/w", "step.completed $rate/w"]);

    // The next execution (another claim of the run) finds the first use made, not the second.
    await real.release(run.lease);
    const again = await execution(real, real, "w2");
    expect(again.nextMark("$rate/w", false)).toBeNull();
    expect(again.nextMark("$rate/w", true)).toBeNull();
    expect(again.nextMark("$rate/w", false)).toBe("$rate/w#2");
    expect(again.nextMark("$rate/w", true)).toBe("$rate/w#2");
  });

  it("keeps a mark's value, which a later execution takes with its use", async () => {
    const { run, real } = await activeRun(make);
    expect(run.madeMark("$approval/f")).toBeUndefined(); // none made: no use taken
    const first = run.nextMark("$approval/f", true);
    expect(first).toBe("$approval/f");
    await run.mark(first as string, { approvalId: "a1", decision: "approve" });

    await real.release(run.lease);
    const again = await execution(real, real, "w2");
    expect(again.madeMark("$approval/f")).toEqual({ approvalId: "a1", decision: "approve" });
    // That use is taken: the next one is the second, which nobody made.
    expect(again.madeMark("$approval/f")).toBeUndefined();
    expect(again.nextMark("$approval/f", false)).toBe("$approval/f#2");
  });
});

describe.each(backends)("marks inside steps on %s", (_label, make) => {
  it("an execution that skips a committed step takes the mark uses its body took", async () => {
    const { run, real } = await activeRun(make);
    /** A use of mark `key`, made when no execution made it: its numbered key, or "made". */
    const use = async (r: ActiveRun, key: `$${string}`) => {
      const numbered = r.nextMark(key, true);
      if (numbered !== null) await r.mark(numbered);
      return numbered ?? "made";
    };
    // A user step and a derived one (a graph node's visit) each take a use; one more after them.
    expect(await run.step("ask", () => use(run, "$rate/w"))).toBe("$rate/w");
    expect(await run.derivedStep("$node/n", () => use(run, "$rate/w"))).toBe("$rate/w#2");
    // A step that takes no mark commits no list.
    expect(await run.step("plain", () => 1)).toBe(1);
    expect(await use(run, "$rate/w")).toBe("$rate/w#3");

    await real.release(run.lease);
    const again = await execution(real, real, "w2");
    // Both steps are skipped (their functions do not run), their uses taken again: the use
    // after them is still the third, made already, and the next new one is the fourth.
    const never = () => {
      throw new Error("a committed step ran again");
    };
    expect(await again.step("ask", never)).toBe("$rate/w");
    expect(await again.derivedStep("$node/n", never)).toBe("$rate/w#2");
    expect(await again.step("plain", never)).toBe(1);
    expect(await use(again, "$rate/w")).toBe("made");
    expect(await use(again, "$rate/w")).toBe("$rate/w#4");
    const steps = (await real.readEvents(again.runId, 0, 1000))
      .filter((e) => e.type === "step.completed")
      .map((e) => e.data.key);
    expect(steps.filter((k) => String(k).startsWith("$marks/"))).toEqual([
      "$marks/ask",
      "$marks/$node/n",
    ]);
  });

  it("two steps running at once: an execution that skips them counts a use again, never skips one", async () => {
    const { run, real } = await activeRun(make);
    const use = async (r: ActiveRun) => {
      const numbered = r.nextMark("$rate/w", true);
      if (numbered !== null) await r.mark(numbered);
      return numbered ?? "made";
    };
    // Step a's body spans step b's use, so a lists both uses, b its own.
    let release = (): void => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const [a, b] = await Promise.all([
      run.step("a", async () => {
        const k = await use(run);
        await gate;
        return k;
      }),
      run.step("b", async () => {
        await sleep(5);
        const k = await use(run);
        release();
        return k;
      }),
    ]);
    expect([a, b]).toEqual(["$rate/w", "$rate/w#2"]);
    expect(await use(run)).toBe("$rate/w#3");

    await real.release(run.lease);
    const again = await execution(real, real, "w2");
    await Promise.all([again.step("a", () => "never"), again.step("b", () => "never")]);
    // Three uses taken back where two were made inside the steps: the use made third is passed
    // over and the next one is new (counted again), where too few would have found it made.
    expect(await use(again)).toBe("$rate/w#4");
  });

  it("a mark's value made after a skipped step goes to the same use again (approvals)", async () => {
    const { run, real } = await activeRun(make);
    const approve = async (r: ActiveRun, id: string) => {
      const made = r.madeMark("$approval/f");
      if (made !== undefined) return made;
      await r.mark(r.nextMark("$approval/f", true) as string, { id });
      return { id };
    };
    expect(await run.step("gate", () => approve(run, "a1"))).toEqual({ id: "a1" });
    expect(await approve(run, "a2")).toEqual({ id: "a2" });

    await real.release(run.lease);
    const again = await execution(real, real, "w2");
    expect(await again.step("gate", () => approve(again, "never"))).toEqual({ id: "a1" });
    // The call after the step takes its own approval, not the step's; a new call gets none.
    expect(again.madeMark("$approval/f")).toEqual({ id: "a2" });
    expect(again.madeMark("$approval/f")).toBeUndefined();
  });
});

describe("step starts on a store without commitStartedStep", () => {
  it("writes the start before the step runs, then the commit", async () => {
    class TwoWriteStore extends InMemoryRunStore {}
    Object.defineProperty(TwoWriteStore.prototype, "commitStartedStep", { value: undefined });
    const { run, writes, history } = await activeRun(() => new TwoWriteStore());
    let seenInside: string[] = [];
    await run.step("s", async () => {
      seenInside = await history();
      return 1;
    });
    expect(seenInside).toEqual(["step.started s"]);
    expect(writes).toEqual(["append", "commitStep"]);
  });
});
