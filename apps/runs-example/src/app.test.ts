// The example end to end: a real HTTP server on port 0, a worker, a SQLite file. A client enqueues,
// follows the SSE stream until the run pauses, drops the connection, resumes the run, and
// reconnects with Last-Event-ID: it gets every event once, in order, up to run.succeeded.
import { mkdtempSync, rmSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SqliteRunStore } from "@nerva/core/sqlite";
import { readSSEEvents } from "@nerva/core/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createQueue, createServerFor, createWorker } from "./app.js";

const dir = mkdtempSync(join(tmpdir(), "nerva-runs-example-"));
const queue = createQueue(new SqliteRunStore({ path: join(dir, "runs.db") }));
const worker = createWorker(queue);
const server = createServerFor(queue);
let base = "";

beforeAll(async () => {
  await worker.start();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.close();
  await worker.stop({ graceSeconds: 0 });
  await queue.store.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Seen {
  id: number;
  type: string;
}

/** Reads SSE events until `stop(event)` says so (or the stream ends), then disconnects. */
async function follow(
  url: string,
  lastEventId: number | null,
  stop: (e: Seen) => boolean,
): Promise<Seen[]> {
  const controller = new AbortController();
  const res = await fetch(url, {
    headers: lastEventId === null ? {} : { "last-event-id": String(lastEventId) },
    signal: controller.signal,
  });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
  const seen: Seen[] = [];
  try {
    for await (const e of readSSEEvents(res.body as AsyncIterable<Uint8Array>)) {
      seen.push({ id: Number(e.id), type: e.event });
      if (stop({ id: Number(e.id), type: e.event })) return seen;
    }
    return seen;
  } finally {
    controller.abort();
  }
}

describe("runs example", () => {
  it("enqueues, streams with Last-Event-ID across a reconnect, resumes and succeeds", async () => {
    const created = await fetch(`${base}/runs`, {
      method: "POST",
      headers: { "idempotency-key": "order-42" },
      body: JSON.stringify({ orderId: "42" }),
    });
    expect(created.status).toBe(202);
    const { id, events } = (await created.json()) as { id: string; events: string };
    const again = await fetch(`${base}/runs`, {
      method: "POST",
      headers: { "idempotency-key": "order-42" },
      body: JSON.stringify({ orderId: "42" }),
    });
    expect(((await again.json()) as { id: string }).id).toBe(id);

    const first = await follow(`${base}${events}`, null, (e) => e.type === "run.paused");
    expect(first.map((e) => e.type)).toEqual([
      "run.enqueued",
      "run.started",
      "step.started",
      "step.completed",
      "run.paused",
    ]);

    const resumed = await fetch(`${base}/runs/${id}/resume`, {
      method: "POST",
      body: JSON.stringify({ approved: true }),
    });
    expect(resumed.status).toBe(200);
    const wrong = await fetch(`${base}/runs/${id}/resume`, { method: "POST", body: "{}" });
    expect(wrong.status).toBe(409);

    const rest = await follow(`${base}${events}`, first.at(-1)?.id ?? 0, () => false);
    expect(rest.at(-1)?.type).toBe("run.succeeded");
    const all = [...first, ...rest];
    expect(all.map((e) => e.id)).toEqual(all.map((_, i) => i + 1));

    const run = (await (await fetch(`${base}/runs/${id}`)).json()) as {
      status: string;
      result: { output: string };
    };
    expect(run).toMatchObject({ status: "succeeded", result: { output: "refunded rf-42" } });
    // The client's view: none of the record's operator data (context, lease, trace, input).
    for (const field of ["context", "lease", "fence", "traceId", "input", "userId", "reclaims"]) {
      expect(run).not.toHaveProperty(field);
    }
  });

  it("answers typed errors: unknown run 404, resume of a run not paused 409, bad body 400", async () => {
    expect((await fetch(`${base}/runs/run_nope/events`)).status).toBe(404);
    expect((await fetch(`${base}/runs/run_nope`)).status).toBe(404);
    const created = (await (
      await fetch(`${base}/runs`, { method: "POST", body: "{}" })
    ).json()) as { id: string };
    await queue.wait(created.id, { until: ["paused"], timeoutSeconds: 10 });
    await fetch(`${base}/runs/${created.id}/cancel`, { method: "POST" });
    const notPaused = await fetch(`${base}/runs/${created.id}/resume`, {
      method: "POST",
      body: "{}",
    });
    expect(notPaused.status).toBe(409);
    expect(((await notPaused.json()) as { error: { code: string } }).error.code).toBe(
      "INVALID_STATE",
    );
    expect((await fetch(`${base}/runs`, { method: "POST", body: "[1]" })).status).toBe(400);
    expect(
      (await fetch(`${base}/runs/x/events`, { headers: { "last-event-id": "-3" } })).status,
    ).toBe(400);
  });
});
