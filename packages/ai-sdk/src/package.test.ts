// The built package as users load it (dist/, which the test command builds first): ESM import,
// CommonJS require, and a clear MISSING_DEPENDENCY when the `ai` peer is not installed.
import { execFileSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  rmSync,
  symlinkSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const pkg = join(dirname(fileURLToPath(import.meta.url)), "..");
const root = join(pkg, "../..");
const node = (args: string[], cwd: string) =>
  execFileSync(process.execPath, args, {
    cwd,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });

const RUN = `const { ExecContext } = await import("@nerva/core");
const { createModel } = await import("@nerva/ai-sdk");
const { scriptedModel } = await import("@nerva/ai-sdk/testing");
const model = createModel(scriptedModel({ rules: [{ when: /hi/, reply: "hello from dist" }] }));
try {
  const { text } = await model.generate({ prompt: "hi" }, ExecContext.create());
  console.log(text);
} catch (err) {
  console.log(err.code, err.details?.package, err.message);
}`;

describe("@nerva/ai-sdk package entry", () => {
  const temp: string[] = [];
  afterAll(() => temp.forEach((d) => rmSync(d, { recursive: true, force: true })));

  it("has been built (the test command runs turbo build first)", () => {
    expect(existsSync(join(pkg, "dist/esm/index.js")), "run `pnpm build` first").toBe(true);
  });

  it("loads with ESM import and answers", () => {
    expect(node(["--input-type=module", "-e", RUN], pkg).trim()).toBe("hello from dist");
  });

  it("loads with CommonJS require", () => {
    const out = node(
      [
        "-e",
        `const m = require("@nerva/ai-sdk"); console.log(typeof m.createModel, typeof m.PriceTable)`,
      ],
      pkg,
    );
    expect(out.trim()).toBe("function function");
  });

  it("publishes no tests, test support or fixtures", () => {
    const out = execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
      cwd: pkg,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
    const files = (JSON.parse(out) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path);
    expect(files).toContain("dist/esm/index.js");
    expect(files).toContain("dist/commonjs/testing/index.js");
    expect(files.filter((f) => /\.test\.|\.test-support\.|\/fixtures\//.test(f))).toEqual([]);
  });

  it("without the `ai` package, a call is MISSING_DEPENDENCY naming it (importing still works)", () => {
    // An app with @nerva/ai-sdk, @nerva/core and zod installed, but not `ai`.
    const app = mkdtempSync(join(tmpdir(), "nerva-ai-sdk-"));
    temp.push(app);
    const modules = join(app, "node_modules");
    mkdirSync(join(modules, "@nerva/ai-sdk"), { recursive: true });
    cpSync(join(pkg, "package.json"), join(modules, "@nerva/ai-sdk/package.json"));
    cpSync(join(pkg, "dist"), join(modules, "@nerva/ai-sdk/dist"), { recursive: true });
    symlinkSync(join(root, "packages/core"), join(modules, "@nerva/core"), "dir");
    symlinkSync(realpathSync(join(pkg, "node_modules/zod")), join(modules, "zod"), "dir");
    const out = node(["--input-type=module", "-e", RUN], app).trim();
    expect(out).toMatch(/^MISSING_DEPENDENCY ai .*npm install ai@\^6/);
  });
});
