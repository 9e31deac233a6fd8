// A run's events over SSE, resumed from Last-Event-ID: a real HTTP server on port 0 serving
// `queue.events(id, { afterSeq: lastEventSeq(req) })` through writeSSE, a Runner executing the
// run, on each real store. A client that drops the connection mid-run and reconnects with the
// last id it got sees every event exactly once, in order.
import http from "node:http";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import { clientRunEvent } from "./client-view.js";
import { RunQueue } from "../runs/run-queue.js";
import { Runner } from "../runs/runner.js";
import { storeBackends } from "../runs/store-backends.test-support.js";
import { readSSEEvents } from "../testing/sse-reader.js";
import { lastEventSeq } from "./last-event-id.js";
import { writeSSE } from "./sse.js";
import { toHttpError } from "./status.js";

function serveEvents(queue: RunQueue): http.Server {
  return http.createServer((req, res) => {
    void (async () => {
      const id = (req.url ?? "").split("/")[2] ?? "";
      const afterSeq = lastEventSeq(req); // before anything is written: a bad header is a 400
      if ((await queue.get(id)) === null) {
        throw new NervaError(ErrorCode.NOT_FOUND, `Run "${id}" does not exist.`);
      }
      await writeSSE(res, queue.events(id, { afterSeq }), null, {
        message: (e) => ({ id: e.seq, event: e.type, data: clientRunEvent(e) }),
        heartbeatSeconds: false,
      });
    })().catch((err: unknown) => {
      const { status, body } = toHttpError(err);
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
    });
  });
}

interface Seen {
  id: number;
  event: string;
  seq: number;
}

/** Follows the stream (from `lastEventId` when given) until `stop` says so, then hangs up. */
async function follow(
  url: string,
  lastEventId: number | null,
  stop: (e: Seen, n: number) => boolean,
): Promise<Seen[]> {
  const controller = new AbortController();
  const res = await fetch(url, {
    headers: lastEventId === null ? {} : { "last-event-id": String(lastEventId) },
    signal: controller.signal,
  });
  expect(res.status).toBe(200);
  const seen: Seen[] = [];
  try {
    for await (const e of readSSEEvents(res.body as AsyncIterable<Uint8Array>)) {
      const item = { id: Number(e.id), event: e.event, seq: (JSON.parse(e.data) as Seen).seq };
      seen.push(item);
      if (stop(item, seen.length)) break;
    }
  } finally {
    controller.abort();
  }
  return seen;
}

for (const [label, open] of storeBackends("sse-resume")) {
  describe(`a run's events over SSE, resumed from Last-Event-ID (${label} store)`, () => {
    const store = open();
    const queue = new RunQueue({ store, name: "sse" });
    const runtime = new InProcessRuntime();
    runtime.register("steps", async (_input, ctx) => {
      const run = ctx.run!;
      for (let i = 0; i < 4; i++) await run.step(`before-${i}`, () => i);
      const answer = await run.waitForInput<{ go: boolean }>("go", { prompt: "Go on?" });
      for (let i = 0; i < 4; i++) await run.step(`after-${i}`, () => i);
      return answer.go ? "went on" : "stopped";
    });
    const runner = new Runner({ queue, runtime, concurrency: 2 });
    const server = serveEvents(queue);
    let base = "";
    beforeAll(async () => {
      await runner.start();
      server.listen(0, "127.0.0.1");
      await once(server, "listening");
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(async () => {
      server.closeAllConnections();
      server.close();
      await runner.stop({ graceSeconds: 0 });
      await store.close();
    });

    it("gives a reconnecting client exactly the events after its last id, none twice, none lost", async () => {
      const run = await queue.enqueue({
        handler: "steps",
        input: { message: "go" },
        ctx: ExecContext.create(),
      });
      const url = `${base}/runs/${run.id}/events`;
      // Drops the connection after 3 events, while the run is still writing its steps.
      const first = await follow(url, null, (_e, n) => n === 3);
      const second = await follow(url, first.at(-1)!.id, (e) => e.event === "run.paused");
      await queue.resume(run.id, { go: true });
      const third = await follow(url, second.at(-1)!.id, (_e, n) => n === 2);
      const rest = await follow(url, third.at(-1)!.id, () => false);
      expect(rest.at(-1)?.event).toBe("run.succeeded");

      const all = [...first, ...second, ...third, ...rest];
      const logged: number[] = [];
      for await (const e of queue.events(run.id)) logged.push(e.seq);
      expect(all.map((e) => e.id)).toEqual(logged);
      expect(all.map((e) => e.seq)).toEqual(logged); // the id is the event's seq
      expect(new Set(logged).size).toBe(logged.length);
      // Reconnecting after the last event of a finished run: nothing more, and the stream ends.
      expect(await follow(url, logged.at(-1)!, () => false)).toEqual([]);
    });

    it("answers a Last-Event-ID that is not a seq with 400, an unknown run with 404", async () => {
      for (const bad of ["abc", "-3", "1.5", "12345678901234567890", "1e3"]) {
        const res = await fetch(`${base}/runs/run_x/events`, { headers: { "last-event-id": bad } });
        expect(res.status, bad).toBe(400);
        const body = (await res.json()) as { error: { code: string; message: string } };
        expect(body.error.code).toBe("INVALID_INPUT");
        expect(body.error.message).toMatch(/Last-Event-ID/);
      }
      expect((await fetch(`${base}/runs/run_nope/events`)).status).toBe(404);
    });
  });
}

describe("lastEventSeq", () => {
  const of = (value: string | string[] | undefined) =>
    lastEventSeq({ headers: { "last-event-id": value } });

  it("reads a whole number, 0 without a header or with an empty one", () => {
    expect(lastEventSeq({ headers: {} })).toBe(0);
    expect(of(undefined)).toBe(0);
    expect(of("")).toBe(0);
    expect(of("0")).toBe(0);
    expect(of(" 42 ")).toBe(42);
    expect(of(String(Number.MAX_SAFE_INTEGER))).toBe(Number.MAX_SAFE_INTEGER);
  });

  it("refuses anything else with INVALID_INPUT naming the header", () => {
    for (const bad of ["x", "-1", "+1", "0x10", "1.0", "9007199254740993", ["1", "2"]]) {
      expect(() => of(bad), String(bad)).toThrow(
        expect.objectContaining({
          code: ErrorCode.INVALID_INPUT,
          message: expect.stringMatching(/^Invalid Last-Event-ID header/),
        }),
      );
    }
  });
});
