// Runs every bench/*.bench.mjs (or those named on the command line) one after the other, each in its
// own Node process with --expose-gc, and prints the JSON line each one reports.
// Usage: pnpm bench            (builds first)
//        node --expose-gc bench/run.mjs runtime orchestrator
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const wanted = process.argv.slice(2);
const files = readdirSync(here)
  .filter((f) => f.endsWith(".bench.mjs"))
  .filter((f) => wanted.length === 0 || wanted.includes(f.replace(".bench.mjs", "")))
  .sort();

let failed = 0;
for (const file of files) {
  console.error(`\n# ${file}`);
  const run = spawnSync(process.execPath, ["--expose-gc", join(here, file)], {
    stdio: ["ignore", "pipe", "inherit"],
    encoding: "utf8",
  });
  process.stdout.write(run.stdout);
  if (run.status !== 0) {
    failed++;
    console.error(`${file} exited with ${run.status}`);
  }
}
process.exit(failed === 0 ? 0 : 1);
