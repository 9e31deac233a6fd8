#!/usr/bin/env node
// Per-call handler that never finishes on its own: only a kill stops it. It ignores SIGTERM and
// SIGINT on purpose, so a runtime that merely asks it to stop would leave it running.
process.on("SIGTERM", () => {});
process.on("SIGINT", () => {});
setInterval(() => {}, 1000);
