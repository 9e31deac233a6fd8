// ARCHITECTURE.md is the map a newcomer reads first: every package, app and core folder it does
// not name would be a room missing from the plan.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { coreFloors, graphFloors } from "../eslint.config.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const page = readFileSync(join(root, "ARCHITECTURE.md"), "utf8");
const dirs = (path: string): string[] =>
  readdirSync(join(root, path), { withFileTypes: true })
    .filter((d) => d.isDirectory() && !d.name.startsWith(".") && d.name !== "node_modules")
    .map((d) => d.name);

describe("ARCHITECTURE.md matches the tree", () => {
  it("names every package and app", () => {
    for (const pkg of dirs("packages")) expect(page, pkg).toContain(`packages/${pkg}`);
    for (const app of dirs("apps")) expect(page, app).toMatch(new RegExp(`apps/[\\w|-]*${app}`));
  });

  it("names every folder of @nerva/core's sources and every subpath export", () => {
    for (const dir of dirs("packages/core/src"))
      expect(page, dir).toMatch(new RegExp(`src/[\\w|/]*${dir}`));
    const pkg = JSON.parse(readFileSync(join(root, "packages/core/package.json"), "utf8")) as {
      exports: Record<string, unknown>;
    };
    for (const subpath of Object.keys(pkg.exports)) {
      if (subpath === "." || subpath === "./package.json") continue;
      expect(page, subpath).toContain(`@nerva/core/${subpath.slice(2)}`);
    }
  });

  it("lists the floors of @nerva/core the lint zones enforce, in their order", () => {
    const rows = [...page.matchAll(/^\| (\d+) +\| ([^|]+)\|/gm)].map((m) =>
      [...(m[2] as string).matchAll(/`([\w.-]+)\/?`/g)].map((n) => n[1]),
    );
    expect(rows).toEqual(coreFloors);
  });

  it("lists the floors inside graph/ in their order, each an existing folder", () => {
    const rows = [...page.matchAll(/^\| graph (\d+) +\| `([\w-]+)\/` +\|/gm)].map((m) => m[2]);
    expect(rows).toEqual(graphFloors);
    expect(dirs("packages/core/src/graph").sort()).toEqual([...graphFloors].sort());
  });
});
