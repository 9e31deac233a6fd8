#!/usr/bin/env node
// The `nerva` bin. No top-level await: the package is also built as CommonJS, which has none. A
// rejection still ends the process with the error printed, as an unhandled one does.
import { main } from "./cli.js";

void main(process.argv.slice(2), {
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
}).then((code) => {
  process.exitCode = code;
});
