// Keeps docs/memory.md honest beyond its snippets (which docs/snippets.test.ts runs): every option
// in its table is accepted by TieredMemory, and the stores it names come from the entry points
// it says.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import * as core from "@nerva/core";
import * as memoryEntry from "@nerva/core/memory";
import * as sqlite from "@nerva/core/sqlite";

const page = readFileSync(join(dirname(fileURLToPath(import.meta.url)), "memory.md"), "utf8");
const section = page.slice(page.indexOf("## Options"), page.indexOf("## Persistence"));
const options = [...section.matchAll(/^\| `(\w+)`/gm)].map((m) => m[1] as string);

describe("docs/memory.md", () => {
  it("documents exactly the options TieredMemory accepts", () => {
    expect(options).toEqual([
      "store",
      "embed",
      "hotTurns",
      "warmLimit",
      "coldLimit",
      "minScore",
      "archiveTurns",
    ]);
    const values: Record<string, unknown> = {
      store: new memoryEntry.InMemoryMemoryStore(),
      embed: async (texts: string[]) => texts.map(() => [1]),
      hotTurns: 5,
      warmLimit: 5,
      coldLimit: 5,
      minScore: 0,
      archiveTurns: false,
    };
    for (const name of options) {
      expect(() => new memoryEntry.TieredMemory({ [name]: values[name] })).not.toThrow();
    }
    expect(() => new memoryEntry.TieredMemory({ nope: 1 } as never)).toThrow(/options/);
  });

  it("states the metadata limits the stores enforce, with the real error", async () => {
    const limits = page.slice(
      page.indexOf("## Limits on metadata"),
      page.indexOf("## Your own store"),
    );
    expect(limits).toMatch(/at most\s+\*\*64 levels\*\*/);
    // The quote may be wrapped across lines in the page.
    const quoted = /`(Invalid event\.metadata: [^`…]+)…`/.exec(limits)?.[1]?.replace(/\s+/g, " ");
    expect(quoted).toBeDefined();
    const memory = new memoryEntry.TieredMemory();
    const ctx = core.ExecContext.create({ userId: "u1", sessionId: "s1" });
    let at64: unknown = 1;
    for (let i = 0; i < 63; i++) at64 = [at64];
    await expect(
      memory.store({ content: "x", metadata: { v: at64 } as never }, ctx),
    ).resolves.toBeDefined();
    const err = await memory
      .store({ content: "x", metadata: { v: [at64] } as never }, ctx)
      .catch((e: unknown) => e as core.NervaError);
    expect(err).toBeInstanceOf(core.NervaError);
    expect((err as core.NervaError).code).toBe("INVALID_INPUT");
    expect((err as core.NervaError).message.startsWith(quoted as string)).toBe(true);
  });

  it("names the entry points that export each store", () => {
    expect(memoryEntry).toHaveProperty("TieredMemory");
    expect(memoryEntry).toHaveProperty("InMemoryMemoryStore");
    expect(sqlite).toHaveProperty("SqliteMemoryStore");
    expect(memoryEntry).not.toHaveProperty("SqliteMemoryStore");
  });
});
