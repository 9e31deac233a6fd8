#!/usr/bin/env node
// Per-call handler that allocates (and touches) memory until something stops it: args.mb
// megabytes in total, 16 MB at a time. Exits 0 if it got all of it.
import { readInput } from "./_stdin.mjs";

const { args } = await readInput();
const total = Number(args.mb ?? 1024);
const blocks = [];
for (let mb = 0; mb < total; mb += 16) blocks.push(Buffer.alloc(16 * 1024 * 1024, 1));
process.stdout.write(`allocated ${blocks.length * 16} MB`);
