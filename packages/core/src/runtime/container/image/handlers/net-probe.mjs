#!/usr/bin/env node
// Per-call handler: tries to open a TCP connection to args.host:args.port and reports what
// happened as data ({ connected, error }); used to prove networkMode "none" isolates a handler.
import net from "node:net";
import { readInput } from "./_stdin.mjs";

const { args } = await readInput();
const outcome = await new Promise((resolve) => {
  const socket = net.connect({ host: args.host, port: Number(args.port) });
  const done = (value) => {
    socket.destroy();
    resolve(value);
  };
  socket.setTimeout(3000, () => done({ connected: false, error: "timeout" }));
  socket.once("connect", () => done({ connected: true, error: null }));
  socket.once("error", (err) => done({ connected: false, error: err.code ?? err.message }));
});
process.stdout.write(
  JSON.stringify({ output: outcome.connected ? "connected" : "unreachable", ...outcome }),
);
