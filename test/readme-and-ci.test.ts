// The README's two set-up commands come first, and CI runs exactly the README's test command.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const readme = readFileSync(join(root, "README.md"), "utf8");
const ci = readFileSync(join(root, ".ci/run"), "utf8");
const shBlocks = [...readme.matchAll(/```sh\n([^`]*)```/g)].map((m) => (m[1] as string).trim());

describe("README set-up commands", () => {
  it("starts with exactly two commands: the demo, then the test suite", () => {
    const firstCode = readme.indexOf("```");
    expect(readme.indexOf("```sh")).toBe(firstCode);
    expect(shBlocks.slice(0, 2)).toEqual([
      "npm i -g pnpm@10 && pnpm install && pnpm demo",
      "npm i -g pnpm@10 && pnpm install && pnpm test",
    ]);
  });

  it("runs the README's test command as the last step of .ci/run", () => {
    const lastLine = ci.trim().split("\n").at(-1);
    expect(lastLine).toBe(shBlocks[1]);
    expect(ci).toMatch(/set -euo pipefail/);
    expect(statSync(join(root, ".ci/run")).mode & 0o111).not.toBe(0);
  });

  it("points both commands at real scripts", () => {
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
    expect(pkg.scripts.demo).toContain("apps/demo/dist/main.js");
    expect(pkg.scripts.demo).toContain("apps/express-app/dist/main.js");
    expect(pkg.scripts.test).toMatch(/turbo run build.*vitest run/);
    expect(pkg.scripts.check).toContain("spec:check");
  });
});

describe("README's package table and documentation index", () => {
  it("names every package and every subpath it exports", () => {
    const entries: string[] = [];
    for (const dir of readdirSync(join(root, "packages"))) {
      const pkg = JSON.parse(readFileSync(join(root, "packages", dir, "package.json"), "utf8"));
      for (const key of Object.keys(pkg.exports ?? {})) {
        if (key === "./package.json") continue;
        entries.push(key === "." ? pkg.name : `${pkg.name}/${key.slice(2)}`);
      }
    }
    expect(entries.length).toBeGreaterThan(10);
    const table = readme.slice(readme.indexOf("## Packages"), readme.indexOf("## Install"));
    for (const entry of entries) expect(table, entry).toContain(`| \`${entry}\``);
  });

  it("names in the root entry's row only what the root exports", async () => {
    const row = readme.split("\n").find((l) => l.startsWith("| `@nerva/core` "));
    const named = [...(row ?? "").matchAll(/`(\w+)`/g)].map((m) => m[1]!);
    expect(named.length).toBeGreaterThan(5);
    const core = (await import("@nerva/core")) as Record<string, unknown>;
    for (const name of named) expect(core, name).toHaveProperty(name);
  });

  it("links every page of docs/", () => {
    const index = readme.slice(readme.indexOf("## Documentation"));
    for (const page of readdirSync(join(root, "docs")).filter((f) => f.endsWith(".md"))) {
      expect(index, page).toContain(`(docs/${page}`);
    }
  });
});
