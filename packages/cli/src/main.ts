#!/usr/bin/env node
// The `nerva` bin.
import { main } from "./cli.js";

process.exitCode = await main(process.argv.slice(2), {
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
});
