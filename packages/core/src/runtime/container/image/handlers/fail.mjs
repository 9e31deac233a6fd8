#!/usr/bin/env node
// Per-call handler: a failure is a non-zero exit; stderr carries the reason.
import { readInput } from "./_stdin.mjs";

await readInput();
process.stderr.write("boom\n");
process.exit(1);
