#!/usr/bin/env node
// Packs every published package (as `pnpm publish` would: publishConfig applied, workspace:
// ranges replaced) into one folder, for installing Nerva from a clone before it is on the
// registry. Usage: node scripts/pack.mjs [destination, default ./tarballs] (build first).
// Prints one JSON line per tarball: { "name", "filename" }.
import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const PACKAGES = ["core", "express", "fastify", "nestjs", "ai-sdk", "otel", "cli"];
const destination = resolve(process.argv[2] ?? join(root, "tarballs"));
mkdirSync(destination, { recursive: true });

for (const name of PACKAGES) {
  const out = execFileSync("pnpm", ["pack", "--json", "--pack-destination", destination], {
    cwd: join(root, "packages", name),
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  const { name: packageName, filename } = JSON.parse(out);
  console.log(JSON.stringify({ name: packageName, filename }));
}
