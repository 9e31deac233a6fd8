#!/usr/bin/env node
// Per-call handler that attacks its host on stdout (args.mode): JSON nested far too deep, or a
// decline (exit code 2) with its reason.
import { readInput } from "./_stdin.mjs";

const input = await readInput();
const { mode, depth = "20000" } = input.args;
const nested = (n) => "[".repeat(n) + "]".repeat(n);
switch (mode) {
  case "stdout-data":
    process.stdout.write(`{"output":"deep","d":${nested(Number(depth))}}\n`);
    break;
  case "stdout-output":
    process.stdout.write(`{"output":${nested(Number(depth))}}\n`);
    break;
  case "decline":
    process.stdout.write(JSON.stringify({ error: "not my job", hint: "ask billing" }) + "\n");
    process.exitCode = 2;
    break;
  default:
    process.exitCode = 1;
}
