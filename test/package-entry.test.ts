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
    expect(existsSync(join(root, "packages/core/dist/index.js")), "run `pnpm build` first").toBe(
      true,
    );
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

  it("exposes only the documented entry points", () => {
    const pkg = JSON.parse(readFileSync(join(root, "packages/core/package.json"), "utf8"));
    for (const [subpath, target] of Object.entries<Record<string, string>>(pkg.exports)) {
      if (subpath === "./package.json") continue;
      expect(target["types"], `${subpath} has types`).toMatch(/^\.\/dist\/.+\.d\.ts$/);
      expect(
        existsSync(join(root, "packages/core", target["default"] as string)),
        `${subpath} is built`,
      ).toBe(true);
      expect(subpath).not.toMatch(/internal/);
    }
  });
});
