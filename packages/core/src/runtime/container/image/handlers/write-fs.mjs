#!/usr/bin/env node
// Per-call handler: tries to write args.path and reports the outcome as data ({ written, error }).
import { writeFileSync } from "node:fs";
import { readInput } from "./_stdin.mjs";

const { args } = await readInput();
let outcome;
try {
  writeFileSync(args.path, "x");
  outcome = { written: true, error: null };
} catch (err) {
  outcome = { written: false, error: err.code ?? err.message };
}
process.stdout.write(
  JSON.stringify({ output: outcome.written ? "written" : "refused", ...outcome }),
);
