// What the protocol adapters cost: the AI SDK UI message stream (@nerva/core/ui-stream) and AG-UI
// (@nerva/core/ag-ui, events encoded by @ag-ui/encoder):
// - per streamed chunk: a run's events written by `writeUIMessageStream` vs the plain SSE writer
//   (`writeSSE` with `clientRunEvent`, the route of docs/runs.md), and the same by
//   `writeAgUiStream`, all three to a client on loopback reading everything, side by side: the
//   same 2,000 `output.delta` events, the writers rotating, medians of the per-run wall and CPU
//   times, divided by the events;
// - a resume replay: a finished run of 1,000 events on SQLite, replayed from its first event as
//   `GET /api/chat/:id/stream` does (`queue.events` → chunks → SSE to a loopback client), and
//   through the AG-UI writer, median.
// Run: pnpm build && node --expose-gc bench/ui-stream.bench.mjs
import { once } from "node:events";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RunQueue, Runner } from "@nerva/core";
import { clientRunEvent, writeSSE } from "@nerva/core/http";
import { SqliteRunStore } from "@nerva/core/sqlite";
import { toUIMessageChunks, writeUIMessageStream } from "@nerva/core/ui-stream";
import { toAgUiEvents, writeAgUiStream } from "@nerva/core/ag-ui";

const EVENTS = 2000;
const ROUNDS = 21;
// Rounds of each adapter–plain pair: the per-chunk difference is a few µs in 12–20 ms requests.
const PAIR_ROUNDS = 81;
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

/**
 * Milliseconds from the request to the last byte read by the client, with `handler` serving;
 * `cpu` collects the process's CPU milliseconds for the same request (server and client share
 * the process: the client's part is the same for every writer, and CPU time is less swayed than
 * wall time by other work on the machine).
 */
async function timed(handler, cpu = null) {
  route = handler;
  const before = process.cpuUsage();
  const started = performance.now();
  const res = await fetch(url);
  await res.arrayBuffer();
  const ms = performance.now() - started;
  const used = process.cpuUsage(before);
  cpu?.push((used.user + used.system) / 1000);
  return ms;
}

const plain = (_req, res) =>
  writeSSE(res, replay(deltas), null, {
    message: (e) => ({ id: e.seq, event: e.type, data: clientRunEvent(e) }),
  });
const adapter = (_req, res) => writeUIMessageStream(res, replay(deltas), { runId: "r" });
const agUi = (_req, res) =>
  writeAgUiStream(res, replay(deltas), { threadId: "t", runId: "r", nervaRunId: "r" });

for (let i = 0; i < 3; i++) {
  await timed(plain);
  await timed(adapter);
  await timed(agUi);
}
// Each adapter is paired with the plain writer in rounds of its own (the pair alternates which
// goes first): with the three writers in one rotation, each one's figure also carried the
// garbage the writer before it left (two adapters, one GC), and the pairs are what the target
// compares.
async function paired(adapterHandler) {
  const plainMs = [];
  const adapterMs = [];
  const plainCpu = [];
  const adapterCpu = [];
  for (let i = 0; i < PAIR_ROUNDS; i++) {
    globalThis.gc?.();
    const order =
      i % 2 === 0
        ? [
            [plain, plainMs, plainCpu],
            [adapterHandler, adapterMs, adapterCpu],
          ]
        : [
            [adapterHandler, adapterMs, adapterCpu],
            [plain, plainMs, plainCpu],
          ];
    for (const [handler, times, cpu] of order) times.push(await timed(handler, cpu));
  }
  return { plainMs, adapterMs, plainCpu, adapterCpu };
}
const ui = await paired(adapter);
const ag = await paired(agUi);
const plainMs = ui.plainMs;
const adapterMs = ui.adapterMs;
const agUiMs = ag.adapterMs;
const perChunkUs = ((median(ui.adapterMs) - median(ui.plainMs)) * 1000) / EVENTS;
const agUiPerChunkUs = ((median(ag.adapterMs) - median(ag.plainMs)) * 1000) / EVENTS;
const cpuPerChunkUs = (pair) => ((median(pair.adapterCpu) - median(pair.plainCpu)) * 1000) / EVENTS;

// In process, no socket: each writer's text for the same events (what the SSE writer is handed),
// µs per chunk, median of 21 passes — the adapters' own work with the least noise.
// @ag-ui/encoder as @nerva/core finds it (an optional peer of the core, not a root dependency).
const { EventEncoder } = createRequire(fileURLToPath(import.meta.resolve("@nerva/core")))(
  "@ag-ui/encoder",
);
const encoder = new EventEncoder();
const texts = {
  plain: async () => {
    for await (const e of replay(deltas)) JSON.stringify(clientRunEvent(e));
  },
  ui: async () => {
    for await (const m of toUIMessageChunks(replay(deltas), { runId: "r" })) JSON.stringify(m.data);
  },
  agUi: async () => {
    const options = { threadId: "t", runId: "r", nervaRunId: "r" };
    for await (const m of toAgUiEvents(replay(deltas), options)) encoder.encodeSSE(m.event);
  },
};
const textUs = {};
for (const [name, pass] of Object.entries(texts)) {
  for (let i = 0; i < 20; i++) await pass();
  const us = [];
  for (let i = 0; i < ROUNDS; i++) {
    const started = performance.now();
    await pass();
    us.push(((performance.now() - started) * 1000) / EVENTS);
  }
  textUs[name] = +median(us).toFixed(3);
}

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
// The same log through the AG-UI writer (what an AG-UI run continuing a paused one reads).
const agUiResume = (_req, res) =>
  writeAgUiStream(res, queue.events(run.id), { threadId: "t", runId: "r", nervaRunId: run.id });
for (let i = 0; i < 3; i++) await timed(agUiResume);
const agUiReplayMs = [];
for (let i = 0; i < ROUNDS; i++) agUiReplayMs.push(await timed(agUiResume));

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
    agUiMs: +median(agUiMs).toFixed(2),
    agUiAddedPerChunkUs: +agUiPerChunkUs.toFixed(2),
    cpuAddedPerChunkUs: +cpuPerChunkUs(ui).toFixed(2),
    agUiCpuAddedPerChunkUs: +cpuPerChunkUs(ag).toFixed(2),
    inProcessUsPerChunk: textUs,
    targetPerChunkUs: 2,
    replayEvents: done.lastSeq,
    replayMs: +median(replayMs).toFixed(2),
    agUiReplayMs: +median(agUiReplayMs).toFixed(2),
    targetReplayMs: 20,
  }),
);
