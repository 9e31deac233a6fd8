// Entry point of a pooled Node worker process (see docs/protocol.md). Started by the subprocess
// runtime as `node worker-entry.js` with the protocol channel on fd 3, so the handler's console
// output and writes to stdout stay plain logs. `--stdio` puts the channel on stdin/stdout instead
// (for containers, which only have those) and sends everything the handler prints to stderr.
import net from "node:net";
import { serveWorker } from "./worker-host.js";

const exit = (): void => process.exit(0);

if (process.argv.includes("--stdio")) {
  const out = process.stdout;
  const frameWrite = out.write.bind(out) as (text: string) => boolean;
  // Anything else that writes to stdout (console.log, process.stdout.write) goes to stderr.
  out.write = process.stderr.write.bind(process.stderr) as typeof out.write;
  serveWorker({ input: process.stdin, output: { write: frameWrite }, onEnd: exit });
} else {
  const channel = new net.Socket({ fd: 3, readable: true, writable: true });
  serveWorker({ input: channel, output: channel, onEnd: exit });
}
