import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import { describeMemoryContract } from "../testing/memory-contract.js";
import { SqliteMemoryStore } from "./sqlite-memory-store.js";
import { TieredMemory } from "./tiered-memory.js";

const dir = mkdtempSync(join(tmpdir(), "nerva-memory-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

describeMemoryContract(
  "SqliteMemoryStore",
  async () => {
    const path = join(dir, `contract-${++n}.db`);
    return {
      store: new SqliteMemoryStore({ path }),
      reopen: async () => new SqliteMemoryStore({ path }),
    };
  },
  { persistent: true },
);

describe("SqliteMemoryStore specifics", () => {
  it("shares one file between connections, each seeing the other's committed writes", async () => {
    const path = join(dir, "shared.db");
    const a = new TieredMemory({ store: new SqliteMemoryStore({ path }), hotTurns: 2 });
    const b = new TieredMemory({ store: new SqliteMemoryStore({ path }), hotTurns: 2 });
    const ctx = ExecContext.create({ userId: "u1", sessionId: "s1" });
    await a.store({ content: "one" }, ctx);
    await b.store({ content: "two" }, ctx);
    await a.store({ content: "three" }, ctx);
    expect((await b.recall("", ctx)).hot.map((t) => t.content)).toEqual(["two", "three"]);
    await a.close();
    await b.close();
  });

  it("names the path when the database cannot be opened", () => {
    const err = (() => {
      try {
        new SqliteMemoryStore({ path: join(dir, "missing-dir", "x.db") });
      } catch (e) {
        return e as NervaError;
      }
      throw new Error("expected a throw");
    })();
    expect(err.code).toBe(ErrorCode.INVALID_OPTIONS);
    expect(err.message).toContain("options.path");
    expect(() => new SqliteMemoryStore({ path: "" })).toThrow(/options\.path/);
    expect(() => new SqliteMemoryStore({ path: "x.db", tablePrefix: "x; DROP" })).toThrow(
      /options\.tablePrefix/,
    );
  });
});
