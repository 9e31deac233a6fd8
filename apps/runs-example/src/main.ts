// Starts the example: `node dist/main.js` runs the HTTP server and a worker in one process;
// `node dist/main.js server` and `node dist/main.js worker` run them apart, sharing the SQLite
// file NERVA_RUNS_DB (default ./runs.db). Try it:
//   curl -XPOST localhost:3000/runs -d '{"orderId":"42"}'
//   curl -N localhost:3000/runs/<id>/events           (Last-Event-ID resumes a stream)
//   curl -XPOST localhost:3000/runs/<id>/resume -d '{"approved":true}'
import { SqliteRunStore } from "@nerva/core/sqlite";
import { createQueue, createServerFor, createWorker } from "./app.js";

const mode = process.argv[2] ?? "all";
const queue = createQueue(new SqliteRunStore({ path: process.env.NERVA_RUNS_DB ?? "runs.db" }));

if (mode === "all" || mode === "worker") {
  const worker = createWorker(queue);
  await worker.start();
  process.once("SIGTERM", () => void worker.stop({ graceSeconds: 10 }).then(() => process.exit(0)));
}
if (mode === "all" || mode === "server") {
  const port = Number(process.env.PORT ?? 3000);
  createServerFor(queue).listen(port, () =>
    console.log(`runs example on http://localhost:${port}`),
  );
}
