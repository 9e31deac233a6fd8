#!/usr/bin/env node
// Runs after tshy in each package's build and finishes package.json from the `exports` tshy wrote.
// - publishConfig.exports: the same map without the workspace's "@nerva/source" condition (the
//   TypeScript sources that tests and tsx runs resolve). pnpm pack/publish put it in place of
//   `exports`, so a published package carries no condition pointing at files it does not ship.
// - typesVersions: TypeScript's `module: commonjs` resolution (node10) reads no `exports`; this
//   maps each subpath (`@nerva/core/http`) to its CommonJS declarations, as `types` does for ".".
import { readFileSync, writeFileSync } from "node:fs";

const SOURCE_CONDITION = "@nerva/source";
const file = "package.json";
const text = readFileSync(file, "utf8");
const pkg = JSON.parse(text);

const withoutSource = (value) => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([condition]) => condition !== SOURCE_CONDITION)
      .map(([condition, target]) => [condition, withoutSource(target)]),
  );
};

const subpathTypes = {};
for (const [subpath, target] of Object.entries(pkg.exports)) {
  const types = target?.require?.types;
  if (subpath === "." || typeof types !== "string") continue;
  subpathTypes[subpath.slice(2)] = [types];
}

pkg.publishConfig = { ...pkg.publishConfig, exports: withoutSource(pkg.exports) };
if (Object.keys(subpathTypes).length > 0) pkg.typesVersions = { "*": subpathTypes };
const next = JSON.stringify(pkg, null, 2) + "\n";
if (next !== text) writeFileSync(file, next);
