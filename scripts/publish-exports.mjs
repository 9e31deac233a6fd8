#!/usr/bin/env node
// Runs after tshy in each package's build. tshy writes `exports` with a "@nerva/source" condition (the
// TypeScript sources, which the workspace's tests and tsx runs resolve); a published package must
// not carry it, or a consumer whose tsconfig sets customConditions with it would type-check
// files that are not in the tarball. pnpm pack/publish replace `exports` with
// `publishConfig.exports`, so that is the same map without "@nerva/source".
import { readFileSync, writeFileSync } from "node:fs";

const file = "package.json";
const text = readFileSync(file, "utf8");
const pkg = JSON.parse(text);

const withoutSource = (value) => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([condition]) => condition !== "@nerva/source")
      .map(([condition, target]) => [condition, withoutSource(target)]),
  );
};

pkg.publishConfig = { ...pkg.publishConfig, exports: withoutSource(pkg.exports) };
const next = JSON.stringify(pkg, null, 2) + "\n";
if (next !== text) writeFileSync(file, next);
