import { afterEach, describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { ErrorCode } from "../errors.js";
import { RunQueue, newRunId } from "../runs/run-queue.js";
import type {
  ClaimRequest,
  ClaimedRun,
  LeaseRef,
  NewRun,
  RunOutcome,
  RunStore,
} from "../runs/store.js";
import { RunEventType, RunStatus, type RunEvent, type RunRecord } from "../runs/types.js";
import { rejection } from "./rejection.js";
import { describePendingRunContract } from "./run-store-contract-pending.js";
import { describeRunnerContract } from "./runner-contract.js";

/**
 * Builds a fresh, empty store for one test. `reopen` (persistent stores) returns a second store
 * over the same data, as another process or a restart would see it.
 */
export type RunStoreContractSetup = () => Promise<{
  store: RunStore;
  reopen?: () => Promise<RunStore>;
}>;

const ctx = ExecContext.create({ userId: "u1", sessionId: "s1" });

function newRun(overrides: Partial<NewRun> = {}): NewRun {
  return {
    id: newRunId(),
    queue: "contract",
    handlers: ["echo"],
    input: { message: "hi", args: {}, tools: [], history: [] },
    retry: {
      maxAttempts: 3,
      initialDelaySeconds: 0,
      backoffFactor: 2,
      maxDelaySeconds: 1,
      jitter: 0,
    },
    maxReclaims: 2,
    priority: 0,
    timeoutSeconds: null,
    idempotencyKey: null,
    context: ctx.toWire(),
    delaySeconds: 0,
    ...overrides,
  };
}

const claimOf = (store: RunStore, workerId = "w1", leaseSeconds = 5, waitSeconds = 0) =>
  store.claim({ queue: "contract", workerId, leaseSeconds, waitSeconds });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The store's `finishAndClaim`, or what a Runner does without it: the finish, then a claim that
 * does not wait (the observable outcome is the same).
 */
async function finishThenClaim(
  store: RunStore,
  lease: LeaseRef,
  outcome: RunOutcome,
  next: ClaimRequest,
): Promise<{ run: RunRecord; next: ClaimedRun | null }> {
  if (store.finishAndClaim !== undefined) return store.finishAndClaim(lease, outcome, next);
  const run = await store.finish(lease, outcome);
  return { run, next: await store.claim(next) };
}

/**
 * The store's `commitStartedStep`, or what a worker does without it: the start, then the commit
 * (the observable outcome is the same; only the start's time differs).
 */
async function startAndCommit(
  store: RunStore,
  lease: LeaseRef,
  key: string,
  value: string,
  startedAt: number,
): Promise<string> {
  if (store.commitStartedStep !== undefined) {
    return store.commitStartedStep(lease, key, value, startedAt);
  }
  await store.append(lease, RunEventType.STEP_STARTED, { key });
  return store.commitStep(lease, key, value);
}

async function allEvents(store: RunStore, id: string): Promise<RunEvent[]> {
  return store.readEvents(id, 0, 10_000);
}

/**
 * The behaviour every {@link RunStore} must show: idempotent create, claim order (priority, then
 * `availableAt`), fenced writes, reclaim of expired leases, cancel, pause and resume, runs
 * created paused and pending runs ended by `finishPending`, gap-free
 * events with a live tail, redrive, list and prune; then the Runner's behaviour on top of it.
 * Run it from a vitest file for each implementation (a custom one too).
 *
 * @example
 * describeRunStoreContract("InMemoryRunStore", async () => ({ store: new InMemoryRunStore() }));
 */
export function describeRunStoreContract(label: string, setup: RunStoreContractSetup): void {
  describe(`run store contract: ${label}`, () => {
    const open: RunStore[] = [];
    afterEach(async () => {
      for (const s of open.splice(0)) await s.close();
    });
    const make = async () => {
      const built = await setup();
      open.push(built.store);
      return {
        store: built.store,
        reopen:
          built.reopen === undefined
            ? undefined
            : async () => {
                const s = await (built.reopen as () => Promise<RunStore>)();
                open.push(s);
                return s;
              },
      };
    };

    describePendingRunContract(make, newRun);

    it("creates one run per idempotency key, even for concurrent creates", async () => {
      const { store } = await make();
      const first = await store.create(newRun({ idempotencyKey: "k1" }));
      expect(first.created).toBe(true);
      expect(first.run).toMatchObject({
        status: "pending",
        attempt: 1,
        lastSeq: 1,
        fence: 0,
        userId: "u1",
        traceId: ctx.traceId,
      });
      const again = await store.create(newRun({ idempotencyKey: "k1" }));
      expect(again).toEqual({ run: first.run, created: false });
      const burst = await Promise.all(
        Array.from({ length: 20 }, () => store.create(newRun({ idempotencyKey: "k2" }))),
      );
      expect(burst.filter((b) => b.created)).toHaveLength(1);
      expect(new Set(burst.map((b) => b.run.id)).size).toBe(1);
      // The same key in another queue is another run.
      const other = await store.create(newRun({ idempotencyKey: "k1", queue: "other" }));
      expect(other.created).toBe(true);
      expect((await store.list({ queue: "contract", limit: 100 })).runs).toHaveLength(2);
    });

    it("refuses a claim on a closed store (INVALID_STATE) instead of answering none at once", async () => {
      const { store } = await make();
      await store.close();
      const claimed = store.claim({
        queue: "q",
        workerId: "w",
        leaseSeconds: 1,
        waitSeconds: 1,
        heartbeatSeconds: 0.1,
      });
      expect((await rejection(claimed)).code).toBe(ErrorCode.INVALID_STATE);
    });

    it("takes durations in seconds: a lease lasts leaseSeconds from its claim and from each heartbeat", async () => {
      const { store } = await make();
      const { run } = await store.create(newRun());
      const claimedFrom = Date.now();
      const claimed = (await claimOf(store, "w1", 2)) as ClaimedRun;
      const claimedTo = Date.now();
      expect(claimed.run.lease?.expiresAt).toBeGreaterThanOrEqual(claimedFrom + 2_000);
      expect(claimed.run.lease?.expiresAt).toBeLessThanOrEqual(claimedTo + 2_000);
      const beatFrom = Date.now();
      await store.heartbeat(claimed.lease, 7.5);
      const beatTo = Date.now();
      const held = await store.get(run.id);
      expect(held?.lease?.expiresAt).toBeGreaterThanOrEqual(beatFrom + 7_500);
      expect(held?.lease?.expiresAt).toBeLessThanOrEqual(beatTo + 7_500);
    });

    it("claims by priority, then by availableAt, and honours delays", async () => {
      const { store } = await make();
      const late = await store.create(newRun({ priority: 5 }));
      const delayed = await store.create(newRun({ priority: 0, delaySeconds: 0.3 }));
      const urgent = await store.create(newRun({ priority: 0 }));
      const order: string[] = [];
      for (let i = 0; i < 2; i++) order.push((await claimOf(store))?.run.id ?? "none");
      expect(order).toEqual([urgent.run.id, late.run.id]);
      expect(await claimOf(store)).toBeNull();
      const started = Date.now();
      const claimed = await claimOf(store, "w1", 5, 3);
      expect(claimed?.run.id).toBe(delayed.run.id);
      expect(Date.now() - started).toBeGreaterThanOrEqual(150);
      expect(claimed?.run.status).toBe("running");
      expect(claimed?.lease.fence).toBe(1);
    });

    it("wakes a waiting claim when a run is created", async () => {
      const { store } = await make();
      const waiting = claimOf(store, "w1", 5, 5);
      await sleep(50);
      const started = Date.now();
      const { run } = await store.create(newRun());
      expect((await waiting)?.run.id).toBe(run.id);
      expect(Date.now() - started).toBeLessThan(1_000);
    });

    it("refuses every write of a worker whose lease was taken over (fencing)", async () => {
      const { store } = await make();
      const { run } = await store.create(newRun());
      const stale = await claimOf(store, "w1", 0.1);
      expect(stale).not.toBeNull();
      const lease = (stale as { lease: LeaseRef }).lease;
      await store.append(lease, RunEventType.STEP_STARTED, { key: "a" });
      await sleep(150);
      // Reclaimed once the lease lapsed (a store may take up to a heartbeat to notice).
      const fresh = await claimOf(store, "w2", 5, 3);
      expect(fresh?.lease.fence).toBe(2);
      expect(fresh?.run.reclaims).toBe(1);
      const before = await allEvents(store, run.id);
      const refused = [
        store.heartbeat(lease, 5),
        store.append(lease, "app.progress", { n: 1 }),
        store.commitStep(lease, "only-stale", '"x"'),
        startAndCommit(store, lease, "only-stale", '"x"', Date.now()),
        store.checkpoint(lease, '{"at":1}'),
        store.pause(lease, { key: "k", prompt: null, kind: "approval", data: {} }),
        store.retry(lease, 0, { code: "HANDLER_ERROR", message: "x", retriable: true }),
        store.release(lease),
        store.finish(lease, {
          status: "succeeded",
          result: { status: "success", output: "stale", data: {}, error: null, handler: "echo" },
        }),
      ];
      for (const p of refused) expect((await rejection(p)).code).toBe(ErrorCode.LEASE_LOST);
      expect(await allEvents(store, run.id)).toEqual(before);
      const after = await store.get(run.id);
      expect(after).toMatchObject({ status: "running", fence: 2, lease: { workerId: "w2" } });
      // The new holder sees no trace of the stale writes.
      const freshLease = (fresh as { lease: LeaseRef }).lease;
      expect(await store.commitStep(freshLease, "only-stale", '"fresh"')).toBe('"fresh"');
      const types = (await allEvents(store, run.id)).map((e) => e.type);
      expect(types).toEqual([
        "run.enqueued",
        "run.started",
        "step.started",
        "run.reclaimed",
        "run.started",
        "step.completed",
      ]);
    });

    it("keeps the first value of a step and hands committed steps and checkpoints to the next claim", async () => {
      const { store, reopen } = await make();
      const { run } = await store.create(newRun());
      const first = await claimOf(store, "w1", 5);
      const lease = (first as { lease: LeaseRef }).lease;
      expect(await store.commitStep(lease, "a", "1")).toBe("1");
      expect(await store.commitStep(lease, "a", "2")).toBe("1");
      await store.checkpoint(lease, '{"n":1}');
      await store.checkpoint(lease, '{"n":2}');
      await store.release(lease);
      const next = await (reopen === undefined ? store : await reopen()).claim({
        queue: "contract",
        workerId: "w2",
        leaseSeconds: 5,
        waitSeconds: 0,
      });
      expect(next?.run.id).toBe(run.id);
      expect(next?.run.attempt).toBe(1);
      expect(Object.fromEntries(next?.steps ?? [])).toEqual({ a: "1" });
      expect(next?.checkpoint).toBe('{"n":2}');
    });

    it("commits a step with its start in one write, dated when it began (commitStartedStep)", async () => {
      const { store, reopen } = await make();
      const { run } = await store.create(newRun());
      const lease = ((await claimOf(store)) as { lease: LeaseRef }).lease;
      const began = Date.now() - 40;
      expect(await startAndCommit(store, lease, "a", '{"n":1}', began)).toBe('{"n":1}');
      // A key committed before keeps its first value; only the start is written.
      expect(await startAndCommit(store, lease, "a", '{"n":2}', Date.now())).toBe('{"n":1}');
      await store.append(lease, "app.after", {});
      const events = (await allEvents(store, run.id)).slice(2);
      expect(events.map((e) => [e.type, e.data])).toEqual([
        ["step.started", { key: "a" }],
        ["step.completed", { key: "a" }],
        ["step.started", { key: "a" }],
        ["app.after", {}],
      ]);
      expect(events.map((e) => e.seq)).toEqual([3, 4, 5, 6]);
      if (store.commitStartedStep !== undefined) {
        expect((events[0] as RunEvent).at).toBe(began);
      }
      expect((events[0] as RunEvent).at).toBeLessThanOrEqual((events[1] as RunEvent).at);
      expect((await store.get(run.id))?.lastSeq).toBe(6);
      await store.release(lease);
      const next = await (reopen === undefined ? store : await reopen()).claim({
        queue: "contract",
        workerId: "w2",
        leaseSeconds: 5,
        waitSeconds: 0,
      });
      expect(Object.fromEntries(next?.steps ?? [])).toEqual({ a: '{"n":1}' });
    });

    it("finishes a run and claims the next due one by priority (finishAndClaim), nothing for a stale lease", async () => {
      const { store } = await make();
      const a = (await store.create(newRun())).run;
      await sleep(5); // due after `a`, whatever the ids of runs created in the same millisecond
      const later = (await store.create(newRun({ priority: 5 }))).run;
      const urgent = (await store.create(newRun())).run;
      const first = (await claimOf(store)) as ClaimedRun;
      expect(first.run.id).toBe(a.id);
      const outcome: RunOutcome = {
        status: RunStatus.SUCCEEDED,
        result: { status: "success", output: "ok", data: {}, error: null, handler: "echo" },
      };
      const next: ClaimRequest = {
        queue: "contract",
        workerId: "w1",
        leaseSeconds: 5,
        waitSeconds: 0,
      };
      const one = await finishThenClaim(store, first.lease, outcome, next);
      expect(one.run).toMatchObject({ id: a.id, status: RunStatus.SUCCEEDED });
      expect(one.next?.run).toMatchObject({ id: urgent.id, status: RunStatus.RUNNING, fence: 1 });
      expect(await store.get(urgent.id)).toEqual(one.next?.run);
      expect(await rejection(finishThenClaim(store, first.lease, outcome, next))).toMatchObject({
        code: ErrorCode.LEASE_LOST,
      });
      expect((await store.get(later.id))?.status).toBe(RunStatus.PENDING);
      const two = await finishThenClaim(store, (one.next as ClaimedRun).lease, outcome, next);
      expect(two.next?.run.id).toBe(later.id);
      const three = await finishThenClaim(store, (two.next as ClaimedRun).lease, outcome, next);
      expect(three.next).toBeNull();
      expect((await store.get(later.id))?.status).toBe(RunStatus.SUCCEEDED);
    });

    it("reclaims an expired lease and fails a run that lost its worker more than maxReclaims times", async () => {
      const { store } = await make();
      const { run } = await store.create(newRun({ maxReclaims: 1 }));
      expect(await claimOf(store, "w1", 0.05)).not.toBeNull();
      await sleep(80);
      const second = await claimOf(store, "w2", 0.05, 3);
      expect(second?.run.reclaims).toBe(1);
      await sleep(80);
      expect(await claimOf(store, "w3", 0.05, 1.5)).toBeNull();
      const failed = await store.get(run.id);
      expect(failed).toMatchObject({ status: "failed", reclaims: 2, lease: null });
      expect(failed?.error?.code).toBe(ErrorCode.LEASE_LOST);
      const types = (await allEvents(store, run.id)).map((e) => e.type);
      expect(types.slice(-2)).toEqual(["run.reclaimed", "run.failed"]);
    });

    it("retries with the next attempt after the delay, and finishes", async () => {
      const { store } = await make();
      const { run } = await store.create(newRun());
      const c1 = await claimOf(store);
      const lease1 = (c1 as { lease: LeaseRef }).lease;
      const retried = await store.retry(lease1, 0.25, {
        code: "HANDLER_ERROR",
        message: "boom",
        retriable: true,
      });
      expect(retried).toMatchObject({ status: "pending", attempt: 2, lease: null });
      expect(retried.availableAt).toBeGreaterThanOrEqual(Date.now() + 150);
      expect(retried.availableAt).toBeLessThanOrEqual(Date.now() + 250); // seconds, not ms
      expect(await claimOf(store)).toBeNull();
      const c2 = await claimOf(store, "w1", 5, 3);
      expect(c2?.run.attempt).toBe(2);
      const done = await store.finish((c2 as { lease: LeaseRef }).lease, {
        status: "succeeded",
        result: { status: "success", output: "ok", data: {}, error: null, handler: "echo" },
      });
      expect(done).toMatchObject({ status: "succeeded", lease: null, error: null });
      expect(done.finishedAt).not.toBeNull();
      const events = await allEvents(store, run.id);
      expect(events.find((e) => e.type === "run.retrying")?.data).toMatchObject({
        delaySeconds: 0.25,
        error: { message: "boom" },
      });
      expect(events.at(-1)).toMatchObject({ type: "run.succeeded", attempt: 2 });
    });

    it("cancels pending and paused runs at once, flags running ones, and leaves finished ones", async () => {
      const { store } = await make();
      const pending = (await store.create(newRun())).run;
      expect(await store.cancel(pending.id, "no longer needed")).toMatchObject({
        status: "cancelled",
      });
      const running = (await store.create(newRun())).run;
      const claimed = await claimOf(store);
      const lease = (claimed as { lease: LeaseRef }).lease;
      expect(lease.runId).toBe(running.id);
      const flagged = await store.cancel(running.id, null);
      expect(flagged).toMatchObject({ status: "running", cancelRequested: true });
      expect(await store.heartbeat(lease, 5)).toEqual({ cancelRequested: true });
      // A run whose cancel was asked never ends succeeded.
      const ended = await store.finish(lease, {
        status: "succeeded",
        result: { status: "success", output: "too late", data: {}, error: null, handler: "echo" },
      });
      expect(ended.status).toBe("cancelled");
      const again = await store.cancel(running.id, null);
      expect(again.status).toBe("cancelled");
      expect(again.lastSeq).toBe(ended.lastSeq);
      expect((await rejection(store.cancel("run_missing", null))).code).toBe(ErrorCode.NOT_FOUND);
    });

    it("pauses, refuses a wrong resume, and resumes with the value under the pause key", async () => {
      const { store } = await make();
      const { run } = await store.create(newRun());
      expect((await rejection(store.resume(run.id, null, "true"))).code).toBe(
        ErrorCode.INVALID_STATE,
      );
      const claimed = await claimOf(store);
      const lease = (claimed as { lease: LeaseRef }).lease;
      const paused = await store.pause(lease, {
        key: "approve",
        prompt: "Refund?",
        kind: "approval",
        data: { total: 42 },
      });
      expect(paused).toMatchObject({ status: "paused", lease: null, pause: { key: "approve" } });
      expect(await claimOf(store)).toBeNull();
      const wrong = await rejection(store.resume(run.id, "other", "true"));
      expect(wrong.code).toBe(ErrorCode.INVALID_INPUT);
      expect(wrong.message).toMatch(/approve/);
      const resumed = await store.resume(run.id, null, '{"approved":true}');
      expect(resumed).toMatchObject({ status: "pending", pause: null });
      const next = await claimOf(store);
      expect(next?.inputs.get("approve")).toBe('{"approved":true}');
      expect(next?.lease.fence).toBe(2);
      const paused2 = await store.pause((next as { lease: LeaseRef }).lease, {
        key: "again",
        prompt: null,
        kind: "text",
        data: {},
      });
      const cancelled = await store.cancel(paused2.id, "gave up");
      expect(cancelled.status).toBe("cancelled");
    });

    it("writes gap-free events and wakes a live tail without polling", async () => {
      const { store } = await make();
      const { run } = await store.create(newRun());
      const claimed = await claimOf(store);
      const lease = (claimed as { lease: LeaseRef }).lease;
      const tail = store.waitForEvents(run.id, 2, { timeoutSeconds: 5 });
      await sleep(30);
      const started = Date.now();
      await store.append(lease, RunEventType.OUTPUT_DELTA, { chunk: "a" });
      await tail;
      expect(Date.now() - started).toBeLessThan(1_000);
      for (let i = 0; i < 20; i++) await store.append(lease, "app.tick", { i });
      const events = await allEvents(store, run.id);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      expect(events.every((e) => e.runId === run.id && e.attempt === 1)).toBe(true);
      expect(await store.readEvents(run.id, 20, 3)).toEqual(events.slice(20, 23));
      expect((await store.get(run.id))?.lastSeq).toBe(events.length);
      // A wait for what already exists returns at once; a timeout ends a wait for nothing.
      await store.waitForEvents(run.id, 0, { timeoutSeconds: 5 });
      const quiet = Date.now();
      await store.waitForEvents(run.id, events.length, { timeoutSeconds: 0.1 });
      expect(Date.now() - quiet).toBeGreaterThanOrEqual(80);
    });

    it("ends RunQueue.wait at the status change, through a run's steps", async () => {
      const { store } = await make();
      const { run } = await store.create(newRun());
      const lease = ((await claimOf(store)) as { lease: LeaseRef }).lease;
      const waited = new RunQueue({ store, name: "contract" }).wait(run.id, { timeoutSeconds: 5 });
      for (let i = 0; i < 5; i++) await startAndCommit(store, lease, `s${i}`, "1", Date.now());
      await store.finish(lease, {
        status: RunStatus.SUCCEEDED,
        result: { status: "success", output: "", data: {}, error: null, handler: "echo" },
      });
      expect((await waited).status).toBe(RunStatus.SUCCEEDED);
    });

    it("wakes a status waiter on a status change, not on events that keep the status", async () => {
      const { store } = await make();
      // Optional (RunQueue.wait falls back to waitForEvents, as the test above shows).
      if (store.waitForStatusChange === undefined) return;
      const { run } = await store.create(newRun());
      // A status other than the run's: at once.
      await store.waitForStatusChange(run.id, RunStatus.RUNNING, { timeoutSeconds: 5 });
      await store.waitForStatusChange("run_missing", RunStatus.PENDING, { timeoutSeconds: 5 });
      let woke = false;
      const claimWait = store
        .waitForStatusChange(run.id, RunStatus.PENDING, { timeoutSeconds: 5 })
        .then(() => (woke = true));
      await sleep(30);
      expect(woke).toBe(false);
      const lease = ((await claimOf(store)) as { lease: LeaseRef }).lease;
      await claimWait;
      woke = false;
      const finishWait = store
        .waitForStatusChange(run.id, RunStatus.RUNNING, { timeoutSeconds: 5 })
        .then(() => (woke = true));
      await startAndCommit(store, lease, "a", "1", Date.now());
      await store.append(lease, "app.tick", { i: 1 });
      await sleep(30);
      expect(woke).toBe(false);
      const started = Date.now();
      await store.finish(lease, {
        status: RunStatus.SUCCEEDED,
        result: { status: "success", output: "", data: {}, error: null, handler: "echo" },
      });
      await finishWait;
      expect(Date.now() - started).toBeLessThan(1_000);
      const quiet = Date.now();
      await store.waitForStatusChange(run.id, RunStatus.SUCCEEDED, { timeoutSeconds: 0.1 });
      expect(Date.now() - quiet).toBeGreaterThanOrEqual(80);
    });

    it("wakes a status waiter with until only on a status in it", async () => {
      const { store } = await make();
      if (store.waitForStatusChange === undefined) return;
      const { run } = await store.create(newRun());
      const until = [RunStatus.SUCCEEDED, RunStatus.FAILED];
      // Already in `until`, or no run: at once.
      await store.waitForStatusChange("run_missing", RunStatus.PENDING, {
        timeoutSeconds: 5,
        until,
      });
      let woke = false;
      const waited = store
        .waitForStatusChange(run.id, RunStatus.PENDING, { timeoutSeconds: 5, until })
        .then(() => (woke = true));
      const lease = ((await claimOf(store)) as { lease: LeaseRef }).lease;
      await sleep(50);
      expect(woke).toBe(false);
      await store.finish(lease, {
        status: RunStatus.SUCCEEDED,
        result: { status: "success", output: "", data: {}, error: null, handler: "echo" },
      });
      await waited;
      expect((await store.get(run.id))?.status).toBe(RunStatus.SUCCEEDED);
      // The run is in `until` now: at once.
      await store.waitForStatusChange(run.id, RunStatus.PENDING, { timeoutSeconds: 5, until });
    });

    it("redrives a failed run with fresh attempts and its steps", async () => {
      const { store } = await make();
      const { run } = await store.create(newRun());
      expect((await rejection(store.redrive(run.id))).code).toBe(ErrorCode.INVALID_STATE);
      const c1 = await claimOf(store);
      const lease = (c1 as { lease: LeaseRef }).lease;
      await store.commitStep(lease, "kept", '"v"');
      await store.finish(lease, {
        status: "failed",
        result: null,
        error: { code: "HANDLER_ERROR", message: "boom", retriable: false },
      });
      const redriven = await store.redrive(run.id);
      expect(redriven).toMatchObject({ status: "pending", attempt: 1, error: null });
      const c2 = await claimOf(store);
      expect(c2?.steps.get("kept")).toBe('"v"');
    });

    it("lists newest first with filters and cursors", async () => {
      const { store } = await make();
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        ids.push((await store.create(newRun({ handlers: [i % 2 === 0 ? "even" : "odd"] }))).run.id);
        await sleep(2);
      }
      const p1 = await store.list({ queue: "contract", limit: 2 });
      expect(p1.runs.map((r) => r.id)).toEqual([ids[4], ids[3]]);
      const p2 = await store.list({ queue: "contract", limit: 2, cursor: p1.nextCursor });
      expect(p2.runs.map((r) => r.id)).toEqual([ids[2], ids[1]]);
      const p3 = await store.list({ queue: "contract", limit: 2, cursor: p2.nextCursor });
      expect(p3.runs.map((r) => r.id)).toEqual([ids[0]]);
      expect(p3.nextCursor).toBeNull();
      const even = await store.list({ queue: "contract", limit: 10, handler: "even" });
      expect(even.runs.map((r) => r.id)).toEqual([ids[4], ids[2], ids[0]]);
      await store.cancel(ids[1] as string, null);
      const cancelled = await store.list({ queue: "contract", limit: 10, status: "cancelled" });
      expect(cancelled.runs.map((r) => r.id)).toEqual([ids[1]]);
      expect((await store.list({ queue: "contract", limit: 10, userId: "nobody" })).runs).toEqual(
        [],
      );
      expect(
        (await rejection(store.list({ queue: "contract", limit: 1, cursor: "junk" }))).code,
      ).toBe(ErrorCode.INVALID_INPUT);
    });

    it("prunes finished runs with their history, never live ones", async () => {
      const { store } = await make();
      const done = (await store.create(newRun({ idempotencyKey: "p" }))).run;
      await store.cancel(done.id, null);
      const live = (await store.create(newRun())).run;
      expect(await store.prune("contract", Date.now() - 60_000)).toBe(0);
      await sleep(5);
      expect(await store.prune("contract", Date.now() + 1)).toBe(1);
      expect(await store.get(done.id)).toBeNull();
      expect(await store.readEvents(done.id, 0, 100)).toEqual([]);
      expect((await store.get(live.id))?.status).toBe(RunStatus.PENDING);
      // The idempotency key is free again once its run is gone.
      expect((await store.create(newRun({ idempotencyKey: "p" }))).created).toBe(true);
    });

    it("answers get() with null and writes with NOT_FOUND for unknown ids", async () => {
      const { store } = await make();
      expect(await store.get("run_nope")).toBeNull();
      expect((await rejection(store.resume("run_nope", null, "1"))).code).toBe(ErrorCode.NOT_FOUND);
      expect((await rejection(store.redrive("run_nope"))).code).toBe(ErrorCode.NOT_FOUND);
      expect(await store.readEvents("run_nope", 0, 10)).toEqual([]);
    });

    it("round-trips every field of a record", async () => {
      const { store, reopen } = await make();
      const init = newRun({
        handlers: ["a", "b"],
        input: {
          message: "m",
          args: { k: "v" },
          tools: [{ name: "t" }],
          history: [{ role: "user", content: "x" }],
        },
        priority: 7,
        timeoutSeconds: 12.5,
        idempotencyKey: "rt",
        delaySeconds: 0.01,
      });
      const { run } = await store.create(init);
      const read = await (reopen === undefined ? store : await reopen()).get(run.id);
      expect(read).toEqual(run);
      expect(read).toMatchObject({
        handlers: ["a", "b"],
        input: init.input,
        priority: 7,
        timeoutSeconds: 12.5,
        retry: init.retry,
        maxAttempts: 3,
        maxReclaims: 2,
        context: init.context,
      } satisfies Partial<RunRecord>);
    });
  });

  describeRunnerContract(label, setup);
}
