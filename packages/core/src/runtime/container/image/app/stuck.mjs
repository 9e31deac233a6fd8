#!/usr/bin/env node
// /app/stuck.mjs: never answers and ignores SIGTERM; only a kill stops it.
process.on("SIGTERM", () => {});
setInterval(() => {}, 1000);
