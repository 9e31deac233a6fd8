// Helpers for the bridge pages' tests (docs/express.test.ts, fastify, nestjs, http-bridges).
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { codeBlocks } from "./code-blocks.js";

export const docsDir = dirname(fileURLToPath(import.meta.url));

/** The ```ts blocks of a page, in order. */
export function tsBlocks(page: string): string[] {
  return codeBlocks(join(docsDir, page))
    .filter((b) => b.lang === "ts")
    .map((b) => b.code);
}

/** The text of a page. */
export function pageText(page: string): string {
  return readFileSync(join(docsDir, page), "utf8");
}

/** Code lines of a block: trailing `// comments` and indentation dropped, blank lines skipped. */
export function codeLines(block: string): string[] {
  return block
    .split("\n")
    .map((line) =>
      line
        .replace(/\s+\/\/ .*$/, "")
        .replace(/\s+/g, " ")
        .trim(),
    )
    .filter((line) => line !== "");
}

/**
 * Lines of `summary` missing from `full` (compared without whitespace, so formatting differs
 * freely): the short block at the top of a page must be the same code as the complete example.
 */
export function missingLines(summary: string, full: string): string[] {
  const squash = (s: string) => s.replace(/\s+/g, "");
  const haystack = squash(full);
  return codeLines(summary).filter((line) => !haystack.includes(squash(line)));
}
