// Exercises docs/container-runtime.md against a real Docker engine: every ```ts no-run block (they
// need Docker, so docs/snippets.test.ts only checks their imports) runs here as an ES module, and
// every ```js block that names an /app/ file must be that file of the example image, verbatim.
// The plain ```ts blocks of the page run in docs/snippets.test.ts.
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { codeBlocks } from "./code-blocks.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const page = join(root, "docs", "container-runtime.md");
const appDir = join(root, "packages/core/src/runtime/container/image/app");
const scratch = join(root, "docs", ".container-snippets");

/** The example image (built by .ci/docker.sh if missing), or null when Docker is absent. */
async function exampleImage(): Promise<string | null> {
  const outcome = await new Promise<{ ok: boolean; stderr: string }>((resolve) => {
    execFile(
      "bash",
      [join(root, ".ci/docker.sh"), "--image"],
      { timeout: 120_000 },
      (err, _out, stderr) => resolve({ ok: err === null, stderr }),
    );
  });
  if (outcome.ok) return "nerva-example-agent:1.0";
  const reason = `no Docker engine / example image: ${outcome.stderr.trim()}`;
  if (process.env["CI"] === "true") throw new Error(`docs/container-runtime.md: ${reason}`);
  console.warn(
    `\n⚠️  SKIPPING docs/container-runtime.md snippets: ${reason}\n   Run .ci/docker.sh (as root).\n`,
  );
  return null;
}

const all = codeBlocks(page);
const dockerSnippets = all.filter((b) => b.lang === "ts" && /\bno-run\b/.test(b.info));
const handlerFiles = all.filter((b) => b.lang === "js");

describe("docs/container-runtime.md", () => {
  it("shows handler files exactly as they are in the example image", () => {
    expect(handlerFiles.length).toBeGreaterThanOrEqual(2);
    for (const block of handlerFiles) {
      const named = /\/\/ \/app\/([\w.-]+)/.exec(block.code);
      expect(named, `js block at line ${block.line} names its /app/ file`).not.toBeNull();
      const file = readFileSync(join(appDir, (named as RegExpExecArray)[1] as string), "utf8");
      expect(`${block.code}\n`, `js block at line ${block.line}`).toBe(file);
    }
  });

  it("has Docker snippets to run", () => {
    expect(dockerSnippets.length).toBeGreaterThanOrEqual(3);
  });
});

const image = await exampleImage();

describe.skipIf(image === null)(
  "docs/container-runtime.md snippets on a real Docker engine",
  () => {
    mkdirSync(scratch, { recursive: true });
    afterAll(() => rmSync(scratch, { recursive: true, force: true }));

    for (const [index, snippet] of dockerSnippets.entries()) {
      it(`container-runtime.md:${snippet.line}`, { timeout: 60_000 }, async () => {
        const file = join(scratch, `snippet_${index}.ts`);
        writeFileSync(file, `${snippet.code}\nexport {};\n`);
        await import(pathToFileURL(file).href);
      });
    }
  },
);
