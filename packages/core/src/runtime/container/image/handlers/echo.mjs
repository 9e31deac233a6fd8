#!/usr/bin/env node
// Per-call handler: plain-text stdout is the output.
import { readInput } from "./_stdin.mjs";

const input = await readInput();
process.stdout.write(`echo: ${input.message}`);
