import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { describeRegistryContract } from "../testing/registry-contract.js";
import { SqliteRegistry } from "./sqlite-registry.js";

const dir = mkdtempSync(join(tmpdir(), "nerva-registry-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

describeRegistryContract(
  "SqliteRegistry",
  async (options) => {
    const path = join(dir, `contract-${++n}.db`);
    return {
      registry: new SqliteRegistry({ ...options, path }),
      reopen: async () => new SqliteRegistry({ ...options, path }),
    };
  },
  { persistent: true },
);

describe("SqliteRegistry specifics", () => {
  it("keeps stats as one row per entry (no history) and shares them between connections", async () => {
    const path = join(dir, "shared.db");
    const a = new SqliteRegistry({ path });
    const b = new SqliteRegistry({ path });
    const ctx = ExecContext.create();
    await a.register({ kind: "tool", name: "search" }, ctx);
    for (let i = 0; i < 200; i++) {
      const registry = i % 2 === 0 ? a : b;
      await registry.recordInvocation("tool", "search", { ok: i % 10 !== 0, latencyMs: 2 }, ctx);
    }
    expect(await b.stats("tool", "search", ctx)).toMatchObject({
      count: 200,
      failures: 20,
      totalLatencyMs: 400,
    });
    await a.close();
    await b.close();
    const Database = (await import("better-sqlite3")).default;
    const db = new Database(path, { readonly: true });
    const tables = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .all();
    const rows = db.prepare("SELECT count(*) AS n FROM nerva_registry").get();
    db.close();
    expect(tables).toEqual([{ name: "nerva_registry" }]);
    expect(rows).toEqual({ n: 1 });
  });

  it("validates its options, naming the field", () => {
    expect(() => new SqliteRegistry({ path: "" })).toThrow(/options\.path/);
    expect(
      () => new SqliteRegistry({ path: join(dir, "x.db"), unhealthyAfterFailures: -1 }),
    ).toThrow(/options\.unhealthyAfterFailures/);
  });
});
