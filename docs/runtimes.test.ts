// docs/runtimes.md shows two blocks it cannot run: the AgentRuntime interface and how to run the
// contract suite. Keep both equal to the code.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { missingLines } from "./bridge-docs.js";
import { codeBlocks } from "./code-blocks.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const source = (path: string) => readFileSync(join(root, "packages/core/src", path), "utf8");
const [iface, contract] = codeBlocks(join(root, "docs", "runtimes.md")).filter(
  (b) => b.lang === "ts" && /\bno-run\b/.test(b.info),
);

describe("docs/runtimes.md", () => {
  it("shows the AgentRuntime interface as declared", () => {
    const declared = source("runtime/types.ts");
    const withoutComments = declared.replace(/\/\*\*[\s\S]*?\*\//g, "");
    expect(missingLines(iface?.code ?? "missing block", withoutComments)).toEqual([]);
  });

  it("names exactly the fixture handlers the runtime contract suite requires", () => {
    const listed = /\/\/ (echo, .*)$/m.exec(contract?.code ?? "")?.[1]?.split(", ") ?? [];
    const table = [...source("testing/runtime-contract.ts").matchAll(/^ \* \| `(\w+)`\s*\|/gm)].map(
      (m) => m[1],
    );
    expect(listed).toEqual(table);
    expect(table.length).toBeGreaterThan(0);
  });
});
