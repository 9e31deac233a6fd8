import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { describeRunStoreContract } from "../../testing/run-store-contract.js";
import { LIMIT_PARAM, openDatabase } from "../../internal/sqlite.js";
import { ExecContext } from "../../context/exec-context.js";
import { rejection } from "../../testing/rejection.js";
import { RunQueue } from "../run-queue.js";
import { SqliteRunStore } from "./sqlite-run-store.js";
import type { LeaseRef } from "../store.js";
import type { RunRecord } from "../types.js";

const dir = mkdtempSync(join(tmpdir(), "nerva-runs-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const file = () => join(dir, `runs-${++n}.db`);

/** The tables as schema version 1 made them (a `last_seq` column, no lease columns). */
const V1_TABLES = `
  CREATE TABLE nerva_runs_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
  INSERT INTO nerva_runs_meta VALUES ('schema', 'nerva-runs'), ('version', '1');
  CREATE TABLE nerva_runs (
    id TEXT PRIMARY KEY, queue TEXT NOT NULL, status TEXT NOT NULL, priority INTEGER NOT NULL,
    claimable_at INTEGER, idempotency_key TEXT, user_id TEXT, created_at INTEGER NOT NULL,
    finished_at INTEGER, last_seq INTEGER NOT NULL, doc TEXT NOT NULL,
    UNIQUE (queue, idempotency_key)
  );
  CREATE INDEX nerva_runs_claim ON nerva_runs (queue, priority, claimable_at)
    WHERE claimable_at IS NOT NULL;
  CREATE INDEX nerva_runs_list ON nerva_runs (queue, created_at, id);
  CREATE INDEX nerva_runs_finished ON nerva_runs (queue, finished_at) WHERE finished_at IS NOT NULL;
  CREATE TABLE nerva_run_events (
    run_id TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL, at INTEGER NOT NULL,
    attempt INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (run_id, seq)
  ) WITHOUT ROWID;
  CREATE TABLE nerva_run_values (
    run_id TEXT NOT NULL, kind TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
    PRIMARY KEY (run_id, kind, key)
  ) WITHOUT ROWID;
`;

describeRunStoreContract("SqliteRunStore", async () => {
  const path = file();
  return {
    store: new SqliteRunStore({ path }),
    reopen: async () => new SqliteRunStore({ path }),
  };
});

describe("SqliteRunStore files", () => {
  it("refuses a file whose run tables are newer or foreign, saying what to do", async () => {
    const newer = file();
    await new SqliteRunStore({ path: newer }).close();
    const db = openDatabase(newer, "path", "test");
    db.prepare("UPDATE nerva_runs_meta SET value = '99' WHERE key = 'version'").run();
    db.close();
    expect(() => new SqliteRunStore({ path: newer })).toThrow(
      expect.objectContaining({
        code: "INVALID_OPTIONS",
        message: expect.stringMatching(/version 99.*Upgrade/),
      }),
    );
    const foreign = file();
    const other = openDatabase(foreign, "path", "test");
    other.exec("CREATE TABLE nerva_runs (x TEXT)");
    other.close();
    expect(() => new SqliteRunStore({ path: foreign })).toThrow(/did not create.*tablePrefix/);
    // Another prefix in the same file is fine.
    const store = new SqliteRunStore({ path: foreign, tablePrefix: "app_" });
    await store.close();
  });

  it("upgrades a file of schema version 1 when opened: its runs carry on where they were", async () => {
    // A running run with a committed step, written the way version 1 laid it out.
    const source = new SqliteRunStore({ path: file() });
    const queue = new RunQueue({ store: source, name: "old" });
    const { id } = await queue.enqueue({
      handler: "h",
      input: { message: "x" },
      ctx: ExecContext.create(),
    });
    const claimed = await source.claim({
      queue: "old",
      workerId: "w1",
      leaseSeconds: 60,
      waitSeconds: 0,
    });
    const lease = (claimed as { lease: LeaseRef }).lease;
    await source.commitStep(lease, "a", '"A"');
    const record = (await source.get(id)) as RunRecord;
    const events = await source.readEvents(id, 0, 100);
    await source.close();
    const path = file();
    const v1 = openDatabase(path, "path", "test");
    v1.exec(V1_TABLES);
    v1.prepare(
      "INSERT INTO nerva_runs VALUES (?, 'old', 'running', 0, ?, NULL, ?, ?, NULL, ?, ?)",
    ).run(
      id,
      record.lease?.expiresAt,
      record.userId,
      record.createdAt,
      record.lastSeq,
      JSON.stringify(record),
    );
    for (const e of events) {
      v1.prepare("INSERT INTO nerva_run_events VALUES (?, ?, ?, ?, ?, ?)").run(
        id,
        e.seq,
        e.type,
        e.at,
        e.attempt,
        JSON.stringify(e.data),
      );
    }
    v1.prepare("INSERT INTO nerva_run_values VALUES (?, 'step', 'a', '\"A\"')").run(id);
    v1.close();

    const store = new SqliteRunStore({ path });
    const meta = openDatabase(path, "path", "test");
    expect(meta.prepare("SELECT value FROM nerva_runs_meta WHERE key = 'version'").get()).toEqual({
      value: "2",
    });
    expect(
      meta.prepare("SELECT 1 AS ok FROM sqlite_master WHERE name = 'nerva_runs_live'").get(),
    ).toEqual({ ok: 1 });
    meta.close();
    expect(await store.get(id)).toEqual(record);
    // The holder's fence still holds, and a stale one is still refused.
    const stale = { ...lease, fence: lease.fence - 1 };
    expect((await rejection(store.append(stale, "app.x", {}))).code).toBe("LEASE_LOST");
    expect(await store.commitStartedStep(lease, "b", '"B"', Date.now())).toBe('"B"');
    expect(await store.commitStep(lease, "a", '"again"')).toBe('"A"');
    const done = await store.finish(lease, {
      status: "succeeded",
      result: { status: "success", output: "ok", data: {}, error: null, handler: "h" },
    });
    expect(done).toMatchObject({ status: "succeeded", lastSeq: record.lastSeq + 3 });
    const after = await store.readEvents(id, 0, 100);
    expect(after.map((e) => e.seq)).toEqual(after.map((_, i) => i + 1));
    expect(after.slice(events.length).map((e) => e.type)).toEqual([
      "step.started",
      "step.completed",
      "run.succeeded",
    ]);
    await store.close();
  });

  it("lists pending runs from the live index, not by walking the queue's finished runs", async () => {
    const path = file();
    const store = new SqliteRunStore({ path });
    const queue = new RunQueue({ store, name: "live" });
    const ctx = ExecContext.create();
    const done = await queue.enqueue({ handler: "h", input: { message: "old" }, ctx });
    await queue.cancel(done.id);
    const waiting = await queue.enqueue({ handler: "h", input: { message: "new" }, ctx });
    const page = await queue.list({ status: "pending" });
    expect(page.runs.map((r) => r.id)).toEqual([waiting.id]);
    await store.close();
    // The plan of the query list() runs for { status: "pending" }: the partial index, no scan.
    const db = openDatabase(path, "path", "test");
    const plan = db
      .prepare(
        `EXPLAIN QUERY PLAN SELECT doc FROM nerva_runs WHERE queue = ? AND status = ? AND claimable_at IS NOT NULL ORDER BY created_at DESC, id DESC ${LIMIT_PARAM}`,
      )
      .all("live", "pending", 101) as { detail: string }[];
    db.close();
    expect(plan.map((p) => p.detail).join(" | ")).toContain("USING INDEX nerva_runs_live");
  });

  it("validates its options", () => {
    expect(() => new SqliteRunStore({ path: "" })).toThrow(/options\.path/);
    expect(() => new SqliteRunStore({ path: file(), tablePrefix: "bad-prefix" } as never)).toThrow(
      /tablePrefix/,
    );
    expect(() => new SqliteRunStore({ path: file(), nope: 1 } as never)).toThrow(/nope/);
  });

  it("answers UNAVAILABLE while another connection holds the write lock past busyTimeoutSeconds", async () => {
    const path = file();
    const store = new SqliteRunStore({ path, busyTimeoutSeconds: 0.05 });
    const locker = openDatabase(path, "path", "test");
    locker.exec("BEGIN IMMEDIATE");
    try {
      const err = await store.cancel("run_x", null).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: "UNAVAILABLE" });
    } finally {
      locker.exec("ROLLBACK");
      locker.close();
      await store.close();
    }
  });
});
