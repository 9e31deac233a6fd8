// The built packages load the way users load them: ESM import and CommonJS require (a NestJS app
// compiled to CommonJS requires them). Runs against dist/, which the test command builds first.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const node = (args: string[]) =>
  execFileSync(process.execPath, args, { cwd: root, encoding: "utf8" });

describe("@nerva/core package entry", () => {
  it("has been built (the test command runs turbo build first)", () => {
    expect(
      existsSync(join(root, "packages/core/dist/esm/index.js")),
      "run `pnpm build` first",
    ).toBe(true);
  });

  it("loads with ESM import and runs an agent", () => {
    const out = node([
      "--input-type=module",
      "-e",
      `import { ExecContext, InProcessRuntime } from "@nerva/core";
       const rt = new InProcessRuntime().register("a", async (i) => "ok:" + i.message);
       const r = await rt.invoke("a", { message: "esm" }, ExecContext.create());
       console.log(r.output);`,
    ]);
    expect(out.trim()).toBe("ok:esm");
  });

  it("loads with CommonJS require", () => {
    const out = node([
      "-e",
      `const { ExecContext, InProcessRuntime } = require("@nerva/core");
       const rt = new InProcessRuntime().register("a", async (i) => "ok:" + i.message);
       rt.invoke("a", { message: "cjs" }, ExecContext.create()).then((r) => console.log(r.output));`,
    ]);
    expect(out.trim()).toBe("ok:cjs");
  });

  it("one process loading both builds: each recognises the other's errors and contexts", () => {
    // The dual-package hazard: an app's ESM code and a CommonJS dependency each get their own
    // copy of @nerva/core. Errors and contexts carry Symbol.for brands, so either copy accepts
    // what the other made.
    const out = node([
      "--input-type=module",
      "-e",
      `import { createRequire } from "node:module";
       import * as esm from "@nerva/core";
       const cjs = createRequire(import.meta.url)("@nerva/core");
       const checks = {
         distinctCopies: esm.NervaError !== cjs.NervaError,
         esmErrorInCjs: new esm.NervaError("TIMEOUT", "late") instanceof cjs.NervaError,
         cjsErrorInEsm: esm.isNervaError(new cjs.NervaError("TIMEOUT", "late"), "TIMEOUT"),
         esmContextInCjs: cjs.isExecContext(esm.ExecContext.create()),
         cjsContextInEsm: esm.isExecContext(cjs.ExecContext.create()),
       };
       const rt = new cjs.InProcessRuntime().register("a", async (i) => "ok:" + i.message);
       const r = await rt.invoke("a", { message: "mixed" }, esm.ExecContext.create());
       console.log(JSON.stringify({ ...checks, output: r.output }));`,
    ]);
    expect(JSON.parse(out)).toEqual({
      distinctCopies: true,
      esmErrorInCjs: true,
      cjsErrorInEsm: true,
      esmContextInCjs: true,
      cjsContextInEsm: true,
      output: "ok:mixed",
    });
  });

  it("finds the container agent it ships from both builds", () => {
    const out = node([
      "--input-type=module",
      "-e",
      `import { existsSync } from "node:fs";
       import { createRequire } from "node:module";
       import { containerAgentPath } from "@nerva/core/container";
       const cjs = createRequire(import.meta.url)("@nerva/core/container").containerAgentPath();
       console.log(cjs === containerAgentPath(), existsSync(cjs), cjs.endsWith("agent.mjs"));`,
    ]);
    expect(out.trim()).toBe("true true true");
  });

  it("exposes only the documented entry points, each built for import and require", () => {
    const pkg = JSON.parse(readFileSync(join(root, "packages/core/package.json"), "utf8"));
    for (const [subpath, target] of Object.entries<Record<string, Record<string, string>>>(
      pkg.exports,
    )) {
      if (subpath === "./package.json") continue;
      for (const [condition, dir] of [
        ["import", "esm"],
        ["require", "commonjs"],
      ] as const) {
        const entry = target[condition];
        expect(entry?.["types"], `${subpath} ${condition} has types`).toMatch(
          new RegExp(`^\\./dist/${dir}/.+\\.d\\.ts$`),
        );
        expect(
          existsSync(join(root, "packages/core", entry?.["default"] as string)),
          `${subpath} ${condition} is built`,
        ).toBe(true);
      }
      expect(subpath).not.toMatch(/internal/);
    }
  });
});
