// Exercises docs/subprocess-runtime.md and the Python example of docs/protocol.md with real
// processes: every handler file shown on the page (```js and ```python blocks naming an agents/
// file) is written verbatim into a scratch agents/ directory, then every ```ts no-run block runs
// as an ES module with that directory's parent as the working directory. (docs/snippets.test.ts
// checks the imports of those blocks; they need the handler files, so they run here.)
import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { ExecContext } from "@nerva/core";
import { SubprocessRuntime } from "@nerva/core/subprocess";
import { afterAll, describe, expect, it } from "vitest";
import { codeBlocks, type CodeBlock } from "./code-blocks.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const scratch = join(root, "docs", ".subprocess-snippets");
const agents = join(scratch, "agents");

const page = codeBlocks(join(root, "docs", "subprocess-runtime.md"));
const handlerFiles = page
  .filter((b) => b.lang === "js" || b.lang === "python")
  .map((b) => {
    const named = /^(?:\/\/|#) (agents\/[\w.-]+)$/m.exec(b.code.split("\n").slice(0, 2).join("\n"));
    return { block: b, file: named?.[1] ?? null };
  });
const snippets = page.filter((b) => b.lang === "ts");

rmSync(scratch, { recursive: true, force: true });
mkdirSync(agents, { recursive: true });
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe("docs/subprocess-runtime.md", () => {
  it("names the agents/ file of every handler block", () => {
    expect(handlerFiles.length).toBeGreaterThanOrEqual(6);
    for (const { block, file } of handlerFiles) {
      expect(
        file,
        `${block.lang} block at line ${block.line} names its agents/ file`,
      ).not.toBeNull();
      const path = join(scratch, file as string);
      writeFileSync(path, `${block.code}\n`);
      if (block.lang === "python") chmodSync(path, 0o755);
    }
  });

  it("marks every TypeScript block no-run (it needs the handler files)", () => {
    expect(snippets.length).toBeGreaterThanOrEqual(6);
    for (const s of snippets) expect(s.info, `ts block at line ${s.line}`).toMatch(/\bno-run\b/);
  });

  for (const [index, snippet] of snippets.entries()) {
    it(`runs the snippet at line ${snippet.line}`, { timeout: 60_000 }, async () => {
      const file = join(scratch, `snippet_${index}.ts`);
      writeFileSync(file, `${snippet.code}\nexport {};\n`);
      const cwd = process.cwd();
      process.chdir(scratch);
      try {
        await import(pathToFileURL(file).href);
      } finally {
        process.chdir(cwd);
      }
    });
  }
});

describe("docs/protocol.md", () => {
  it("its complete Python handler works as shown", async () => {
    const python = codeBlocks(join(root, "docs", "protocol.md")).filter((b) => b.lang === "python");
    expect(python).toHaveLength(1);
    const dir = join(scratch, "protocol-agents");
    mkdirSync(dir, { recursive: true });
    const file = join(dir, "my_agent.py");
    writeFileSync(file, `${(python[0] as CodeBlock).code}\n`);
    chmodSync(file, 0o755);
    const runtime = new SubprocessRuntime({ handlerDir: dir, pool: { min: 0 } });
    try {
      const chunks: string[] = [];
      const ctx = ExecContext.create({
        userId: "reader",
        stream: { push: (chunk) => void chunks.push(chunk) },
      });
      const result = await runtime.invoke("my_agent", { message: "hi there" }, ctx);
      expect(result).toMatchObject({
        status: "success",
        output: "HI THERE",
        data: { user: "reader" },
      });
      expect(chunks).toEqual(["hi ", "there "]);
      expect(ctx.tokenUsage).toMatchObject({ promptTokens: 10, completionTokens: 5 });
    } finally {
      await runtime.close();
    }
  }, 30_000);
});
