#!/usr/bin/env node
// Per-call handler: exit code 2 means "wrong handler".
import { readInput } from "./_stdin.mjs";

await readInput();
process.exit(2);
