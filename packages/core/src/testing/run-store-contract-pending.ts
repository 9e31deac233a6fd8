// The part of the run store contract about runs that nothing executes: a run created paused
// (NewRun.pause) and a pending run ended by `finishPending`, as a policy approval lives.
import { expect, it } from "vitest";
import { ErrorCode } from "../errors.js";
import type { NewRun, RunOutcome, RunStore } from "../runs/store.js";
import { RunEventType, type RunPause } from "../runs/types.js";
import { rejection } from "./rejection.js";

type Make = () => Promise<{ store: RunStore; reopen?: (() => Promise<RunStore>) | undefined }>;

const PAUSE: RunPause = {
  key: "$approval",
  prompt: "Approve?",
  kind: "approval",
  data: { rule: "r" },
  answeredBy: { roles: ["manager"], exceptUsers: ["u1"] },
};

const used = (answers: ReadonlyMap<string, string>): RunOutcome => ({
  status: "succeeded",
  result: {
    status: "success",
    output: answers.get("$approval") ?? "none",
    data: {},
    error: null,
    handler: "gate",
  },
});

/** Registers the tests; `newRun` makes a run of the contract's queue. */
export function describePendingRunContract(
  make: Make,
  newRun: (overrides?: Partial<NewRun>) => NewRun,
): void {
  const claimOf = (store: RunStore) =>
    store.claim({ queue: "contract", workerId: "w1", leaseSeconds: 5, waitSeconds: 0 });

  it("creates a run paused when NewRun has a pause: not claimable until resumed", async () => {
    const { store } = await make();
    const { run } = await store.create(newRun({ pause: PAUSE }));
    expect(run).toMatchObject({ status: "paused", pause: PAUSE, lastSeq: 2, lease: null });
    expect(await store.get(run.id)).toMatchObject({ status: "paused", pause: PAUSE });
    const events = await store.readEvents(run.id, 0, 10);
    expect(events.map((e) => e.type)).toEqual([RunEventType.ENQUEUED, RunEventType.PAUSED]);
    expect(events[1]?.data).toMatchObject({ key: "$approval", kind: "approval" });
    expect(events[1]?.data["answeredBy"]).toEqual(PAUSE.answeredBy);
    expect(await claimOf(store)).toBeNull();
    const listed = await store.list({ queue: "contract", status: "paused", limit: 10 });
    expect(listed.runs.map((r) => r.id)).toEqual([run.id]);
  });

  it("finishes a resumed run nobody holds once, handing back its answers", async () => {
    const { store } = await make();
    const { run } = await store.create(newRun({ pause: PAUSE }));
    // A paused run is not pending: nothing is finished.
    expect((await rejection(store.finishPending(run.id, used))).code).toBe(ErrorCode.INVALID_STATE);
    await store.resume(run.id, null, '"yes"');
    // `null` reads the answers and leaves the run as it is.
    const read = await store.finishPending(run.id, () => null);
    expect(read.run.status).toBe("pending");
    expect(read.answers.get("$approval")).toBe('"yes"');
    expect((await store.get(run.id))?.lastSeq).toBe(read.run.lastSeq);

    const done = await store.finishPending(run.id, used);
    expect(done.run).toMatchObject({ status: "succeeded", result: { output: '"yes"' } });
    expect((await store.get(run.id))?.status).toBe("succeeded");
    const last = (await store.readEvents(run.id, 0, 20)).at(-1);
    expect(last).toMatchObject({ type: RunEventType.SUCCEEDED, data: { output: '"yes"' } });
    expect((await rejection(store.finishPending(run.id, used))).code).toBe(ErrorCode.INVALID_STATE);
    expect((await rejection(store.finishPending("run_missing", used))).code).toBe(
      ErrorCode.NOT_FOUND,
    );
    // Nothing delivers it afterwards.
    expect(await claimOf(store)).toBeNull();
  });

  it("lets exactly one of concurrent finishPending calls end the run, across store instances", async () => {
    const { store, reopen } = await make();
    const other = reopen === undefined ? store : await reopen();
    for (let round = 0; round < 5; round++) {
      const { run } = await store.create(newRun({ pause: PAUSE }));
      await store.resume(run.id, null, `"${round}"`);
      const tries = [store, other, store, other].map((s) =>
        s.finishPending(run.id, used).then(
          () => "won",
          (err: { code?: string }) => err.code,
        ),
      );
      const outcomes = await Promise.all(tries);
      expect(outcomes.filter((o) => o === "won")).toHaveLength(1);
      expect(outcomes.filter((o) => o === ErrorCode.INVALID_STATE)).toHaveLength(3);
      const events = await store.readEvents(run.id, 0, 20);
      expect(events.filter((e) => e.type === RunEventType.SUCCEEDED)).toHaveLength(1);
    }
  });
}
