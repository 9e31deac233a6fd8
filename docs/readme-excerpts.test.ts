// The README's framework excerpts (```ts no-run) are the same code as the complete examples on
// the framework pages, which run in the page tests: every line of an excerpt must appear there.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { missingLines, tsBlocks } from "./bridge-docs.js";
import { codeBlocks } from "./code-blocks.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const excerpts = codeBlocks(join(root, "README.md")).filter(
  (b) => b.lang === "ts" && /\bno-run\b/.test(b.info),
);
const pageOf: Record<string, string> = {
  "@nerva/express": "express.md",
  "@nerva/fastify": "fastify.md",
  "@nerva/nestjs": "nestjs.md",
};

describe("README framework excerpts", () => {
  it("has one excerpt per bridge", () => {
    expect(excerpts.map((b) => /from "(@nerva\/\w+)"/.exec(b.code)?.[1])).toEqual(
      Object.keys(pageOf),
    );
  });

  for (const excerpt of excerpts) {
    const bridge = /from "(@nerva\/\w+)"/.exec(excerpt.code)?.[1] ?? "";
    it(`README.md:${excerpt.line} (${bridge}) is code from the complete example in docs/${pageOf[bridge]}`, () => {
      const full = tsBlocks(pageOf[bridge] as string).at(-1) as string;
      expect(missingLines(excerpt.code, full)).toEqual([]);
    });
  }
});
