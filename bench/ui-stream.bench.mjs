// What the AI SDK UI message stream adapter (@nerva/core/ui-stream) costs:
// - per streamed chunk: a run's events written by `writeUIMessageStream` vs the plain SSE writer
//   (`writeSSE` with `clientRunEvent`, the route of docs/runs.md), both to a client on loopback
//   reading everything; the same 2,000 `output.delta` events, runs alternating, median of the
//   per-run times, divided by the events;
// - a resume replay: a finished run of 1,000 events on SQLite, replayed from its first event as
//   `GET /api/chat/:id/stream` does (`queue.events` → chunks → SSE to a loopback client), median.
// Run: pnpm build && node --expose-gc bench/ui-stream.bench.mjs
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RunQueue, Runner } from "@nerva/core";
import { clientRunEvent, writeSSE } from "@nerva/core/http";
import { SqliteRunStore } from "@nerva/core/sqlite";
import { writeUIMessageStream } from "@nerva/core/ui-stream";

const EVENTS = 2000;
const ROUNDS = 21;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const deltas = [
  { runId: "r", seq: 1, type: "run.started", at: 0, attempt: 1, data: {} },
  ...Array.from({ length: EVENTS }, (_, i) => ({
    runId: "r",
    seq: i + 2,
    type: "output.delta",
    at: 0,
    attempt: 1,
    data: { chunk: `token${i} ` },
  })),
  { runId: "r", seq: EVENTS + 2, type: "run.succeeded", at: 0, attempt: 1, data: { output: "" } },
];
async function* replay(events) {
  for (const e of events) yield e;
}

let route = null;
const server = http.createServer((req, res) => void route(req, res));
server.listen(0, "127.0.0.1");
await once(server, "listening");
const url = `http://127.0.0.1:${server.address().port}/`;

/** Milliseconds from the request to the last byte read by the client, with `handler` serving. */
async function timed(handler) {
  route = handler;
  const started = performance.now();
  const res = await fetch(url);
  await res.arrayBuffer();
  return performance.now() - started;
}

const plain = (_req, res) =>
  writeSSE(res, replay(deltas), null, {
    message: (e) => ({ id: e.seq, event: e.type, data: clientRunEvent(e) }),
  });
const adapter = (_req, res) => writeUIMessageStream(res, replay(deltas), { runId: "r" });

for (let i = 0; i < 3; i++) {
  await timed(plain);
  await timed(adapter);
}
const plainMs = [];
const adapterMs = [];
for (let i = 0; i < ROUNDS; i++) {
  globalThis.gc?.();
  if (i % 2 === 0) {
    plainMs.push(await timed(plain));
    adapterMs.push(await timed(adapter));
  } else {
    adapterMs.push(await timed(adapter));
    plainMs.push(await timed(plain));
  }
}
const perChunkUs = ((median(adapterMs) - median(plainMs)) * 1000) / EVENTS;

// A finished run of 1,000 events on SQLite: enqueued, started, 997 deltas, succeeded.
const dir = mkdtempSync(join(tmpdir(), "nerva-ui-bench-"));
const store = new SqliteRunStore({ path: join(dir, "runs.db") });
const queue = new RunQueue({ store, name: "chat" });
const runner = new Runner({
  queue,
  handlers: {
    talk: async function* () {
      for (let i = 0; i < 997; i++) yield `token${i} `;
    },
  },
});
await runner.start();
const run = await queue.enqueue({ handler: "talk", input: { message: "hi" } });
const done = await queue.wait(run.id, { timeoutSeconds: 60 });
await runner.stop();
const resume = (_req, res) => writeUIMessageStream(res, queue.events(run.id), { runId: run.id });
for (let i = 0; i < 3; i++) await timed(resume);
const replayMs = [];
for (let i = 0; i < ROUNDS; i++) replayMs.push(await timed(resume));

server.close();
await store.close();
rmSync(dir, { recursive: true, force: true });

console.log(
  JSON.stringify({
    bench: "ui-stream",
    events: EVENTS,
    plainSSEMs: +median(plainMs).toFixed(2),
    adapterMs: +median(adapterMs).toFixed(2),
    addedPerChunkUs: +perChunkUs.toFixed(2),
    targetPerChunkUs: 2,
    replayEvents: done.lastSeq,
    replayMs: +median(replayMs).toFixed(2),
    targetReplayMs: 20,
  }),
);
