import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { describeRunStoreContract } from "../testing/run-store-contract.js";
import { openDatabase } from "../sqlite/driver.js";
import { SqliteRunStore } from "./sqlite-run-store.js";

const dir = mkdtempSync(join(tmpdir(), "nerva-runs-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const file = () => join(dir, `runs-${++n}.db`);

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

  it("validates its options", () => {
    expect(() => new SqliteRunStore({ path: "" })).toThrow(/options\.path/);
    expect(() => new SqliteRunStore({ path: file(), tablePrefix: "bad-prefix" } as never)).toThrow(
      /tablePrefix/,
    );
    expect(() => new SqliteRunStore({ path: file(), nope: 1 } as never)).toThrow(/nope/);
  });

  it("answers UNAVAILABLE while another connection holds the write lock past busyTimeoutMs", async () => {
    const path = file();
    const store = new SqliteRunStore({ path, busyTimeoutMs: 50 });
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
