// An onError that throws, called from an event or a worker loop, is reported once as a process
// warning; the caller goes on (the bus keeps delivering, the Runner keeps claiming) and nothing
// becomes an unhandled rejection. The Runner's store is a real SQLite store whose first claims
// fail.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeEach, expect, it } from "vitest";
import { RunQueue } from "../../runs/run-queue.js";
import { Runner } from "../../runs/runner.js";
import { SqliteRunStore } from "../../runs/sqlite/sqlite-run-store.js";
import { InProcessRuntime } from "../../runtime/in-process-runtime.js";
import { EventBus } from "../host/event-bus.js";
import { RunEventType, type RunEvent } from "../../runs/types.js";

const dir = mkdtempSync(join(tmpdir(), "nerva-on-error-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let warnings: Error[] = [];
let rejections: unknown[] = [];
const onWarning = (w: Error) => warnings.push(w);
const onRejection = (r: unknown) => rejections.push(r);
beforeEach(() => {
  warnings = [];
  rejections = [];
  process.on("warning", onWarning);
  process.on("unhandledRejection", onRejection);
});
afterEach(() => {
  process.off("warning", onWarning);
  process.off("unhandledRejection", onRejection);
});

const event = (seq: number): RunEvent => ({
  type: RunEventType.STARTED,
  runId: "run_x",
  seq,
  attempt: 1,
  at: Date.now(),
  data: {},
});

it("EventBus: a throwing handler reaches a throwing onError; later events are still delivered", async () => {
  const told: string[] = [];
  const bus = new EventBus({
    onError: (err) => {
      told.push((err as Error).message);
      throw new Error("onError broke");
    },
  });
  const seqs: number[] = [];
  let third!: () => void;
  const gotThird = new Promise<void>((r) => (third = r));
  bus.subscribe(null, (e) => {
    seqs.push(e.seq);
    if (e.seq === 3) third();
    if (e.seq < 3) throw new Error(`handler broke at ${e.seq}`);
  });
  bus.publish(event(1), "default");
  bus.publish(event(2), "default");
  bus.publish(event(3), "default");
  await gotThird;
  await new Promise((r) => setImmediate(r));
  expect(seqs).toEqual([1, 2, 3]);
  expect(told).toEqual(["handler broke at 1", "handler broke at 2"]);
  expect(warnings.map((w) => w.message)).toEqual([
    expect.stringContaining('the EventBus\'s onError threw "onError broke"'),
  ]);
  expect(rejections).toEqual([]);
});

it("Runner: a throwing onError does not stop the claim loop", async () => {
  const real = new SqliteRunStore({ path: join(dir, "runner.db") });
  // The real store, whose first two claims fail (as when the database is briefly unreachable).
  let failures = 2;
  const store = new Proxy(real, {
    get(target, name, receiver) {
      const value: unknown = Reflect.get(target, name, receiver);
      if (name !== "claim" || typeof value !== "function") return value;
      return (...args: unknown[]) =>
        failures-- > 0
          ? Promise.reject(new Error("claim failed"))
          : (value as (...a: unknown[]) => unknown).apply(target, args);
    },
  });
  const queue = new RunQueue({ store, name: "q" });
  const told: string[] = [];
  let twice!: () => void;
  const toldTwice = new Promise<void>((r) => (twice = r));
  const runner = new Runner({
    queue,
    runtime: new InProcessRuntime(),
    heartbeatSeconds: 1,
    onError: (err) => {
      told.push((err as Error).message);
      if (told.length === 2) twice();
      throw new Error("onError broke");
    },
  });
  await runner.start();
  await toldTwice; // the claim loop went on past the first throwing onError
  await runner.stop({ graceSeconds: 0 });
  await real.close();
  expect(told).toEqual(["claim failed", "claim failed"]);
  expect(warnings.filter((w) => w.message.includes("Runner's onError"))).toHaveLength(1);
  expect(rejections).toEqual([]);
});
