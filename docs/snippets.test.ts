// Runs every TypeScript snippet in README.md and docs/*.md, so the docs cannot drift from the code.
//
// A ```ts block is executed as an ES module (it may use top-level await and node:assert).
// A block fenced as ```ts no-run (servers, Docker, long-running examples) is not executed, but every
// module it imports must resolve and export each name it imports; such a block must also be
// exercised by an example app or a test next to it, which its doc page names.
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { codeBlocks } from "./code-blocks.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const scratch = join(root, "docs", ".snippets");

interface Snippet {
  readonly file: string;
  readonly line: number;
  readonly run: boolean;
  readonly code: string;
}

function markdownFiles(): string[] {
  const docs = readdirSync(join(root, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => join(root, "docs", f));
  return [join(root, "README.md"), ...docs];
}

function extractSnippets(file: string): Snippet[] {
  return codeBlocks(file)
    .filter((b) => b.lang === "ts" || b.lang === "typescript")
    .map((b) => ({
      file: relative(root, file),
      line: b.line,
      run: !/\bno-run\b/.test(b.info),
      code: b.code,
    }));
}

/** Value imports of a snippet: `import { a, type B, c as d } from "x"` → x: [a, c]. */
function valueImports(code: string): Map<string, string[]> {
  const found = new Map<string, string[]>();
  const re = /import\s+(type\s+)?(?:(\w+)\s*,?\s*)?(?:\{([^}]*)\})?\s*from\s*["']([^"']+)["']/g;
  for (const m of code.matchAll(re)) {
    if (m[1]) continue;
    const names = (m[3] ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s !== "" && !s.startsWith("type "))
      .map((s) => s.split(/\s+as\s+/)[0] as string);
    if (m[2]) names.push("default");
    found.set(m[4] as string, [...(found.get(m[4] as string) ?? []), ...names]);
  }
  return found;
}

const snippets = markdownFiles().flatMap(extractSnippets);
mkdirSync(scratch, { recursive: true });
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("documentation snippets", () => {
  it("finds snippets in the README and the docs", () => {
    expect(snippets.some((s) => s.file === "README.md" && s.run)).toBe(true);
  });

  for (const [index, snippet] of snippets.entries()) {
    const label = `${snippet.file}:${snippet.line}${snippet.run ? "" : " (imports only)"}`;
    it(label, { timeout: 30_000 }, async () => {
      for (const [specifier, names] of valueImports(snippet.code)) {
        if (specifier.startsWith(".")) continue;
        const mod = (await import(specifier)) as Record<string, unknown>;
        for (const name of names) expect(mod, `${specifier} exports ${name}`).toHaveProperty(name);
      }
      if (!snippet.run) return;
      const file = join(scratch, `${snippet.file.replace(/[^\w]/g, "_")}_${index}.ts`);
      writeFileSync(file, `${snippet.code}\nexport {};\n`);
      await import(pathToFileURL(file).href);
    });
  }
});
