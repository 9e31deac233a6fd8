// The one SSE writer over a real HTTP server on 127.0.0.1: ids, event names and multi-line data on
// the wire, a final event or none, error events without internals, the heartbeat, and every way
// the client can leave (while the producer waits, and while the writer waits for drain).
import { once } from "node:events";
import http, { type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import { readSSEEvents, type SSEEvent } from "../testing/sse-reader.js";
import type { SSEOutcome } from "./sse-event-source.js";
import { writeSSE } from "./sse.js";

const servers: http.Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function serve(handler: (res: ServerResponse) => Promise<unknown>): Promise<string> {
  const server = http.createServer((_req, res) => void handler(res));
  servers.push(server);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function collect(url: string): Promise<{ res: Response; events: SSEEvent[] }> {
  const res = await fetch(url);
  const events: SSEEvent[] = [];
  for await (const e of readSSEEvents(res.body as AsyncIterable<Uint8Array>)) events.push(e);
  return { res, events };
}

async function text(url: string): Promise<string> {
  return (await fetch(url)).text();
}

describe("writeSSE over a real HTTP server", () => {
  it("sends SSE headers, one event per chunk with a running id, and a final done event", async () => {
    const ctx = ExecContext.create();
    const url = await serve(async (res) => {
      res.setHeader("x-request-id", ctx.requestId);
      await writeSSE(
        res,
        (async function* () {
          yield "Hello";
          yield " wor\nld";
          return { status: "success" };
        })(),
        ctx,
      );
    });
    const { res, events } = await collect(url);
    expect(res.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("no-cache, no-transform");
    expect(res.headers.get("x-accel-buffering")).toBe("no");
    expect(res.headers.get("x-request-id")).toBe(ctx.requestId);
    expect(events).toEqual([
      { event: "message", id: "1", data: "Hello" },
      { event: "message", id: "2", data: " wor\nld" },
      {
        event: "done",
        id: "3",
        data: JSON.stringify({ requestId: ctx.requestId, result: { status: "success" } }),
      },
    ]);
  });

  it("writes id, event and one data line per line, exactly, for mapped items", async () => {
    const url = await serve((res) =>
      writeSSE(
        res,
        (async function* () {
          yield { seq: 7, type: "run.started", note: "a\r\nb\nc" };
          yield { seq: 9, type: "message", note: "" };
        })(),
        null,
        { message: (e) => ({ id: e.seq, event: e.type, data: e.note }) },
      ),
    );
    expect(await text(url)).toBe(
      "event: run.started\nid: 7\ndata: a\ndata: b\ndata: c\n\n" + "id: 9\ndata: \n\n",
    );
  });

  it("ends a mapped stream with the source, with no done event unless asked", async () => {
    const source = () =>
      (async function* () {
        yield 1;
        return "end";
      })();
    const plain = await serve((res) =>
      writeSSE(res, source(), null, { message: (n) => ({ id: n, data: n }) }),
    );
    expect((await collect(plain)).events).toEqual([{ event: "message", id: "1", data: "1" }]);
    const withDone = await serve((res) =>
      writeSSE(res, source(), null, {
        message: (n) => ({ id: n, data: n }),
        done: (returned) => ({ returned }),
      }),
    );
    expect((await collect(withDone)).events.at(-1)).toEqual({
      event: "done",
      id: "1", // no id of its own: a client keeps the last one it saw
      data: '{"returned":"end"}',
    });
    const noDone = await serve(
      (res) =>
      writeSSE(res, (async function* () { yield "x"; })(), null, { done: false }), // prettier-ignore
    );
    expect((await collect(noDone)).events).toEqual([{ event: "message", id: "1", data: "x" }]);
  });

  for (const [label, bad] of [
    ["an id with a line break", { id: "1\ndata: forged", data: "x" }],
    ["an event name with a line break", { event: "ok\r\nevent: admin", data: "x" }],
    ["an empty event name", { event: "", data: "x" }],
    ["an id that is not a finite number", { id: Number.NaN, data: "x" }],
  ] as const) {
    it(`refuses ${label}: an error event without its text, the producer stopped`, async () => {
      let finallyRan = false;
      const reported: unknown[] = [];
      const url = await serve((res) =>
        writeSSE(
          res,
          (async function* () {
            try {
              yield { id: 1, data: "fine" };
              yield bad;
              yield { id: 3, data: "never taken" };
            } finally {
              finallyRan = true;
            }
          })(),
          null,
          { message: (m) => m as never, onError: (e) => reported.push(e) },
        ),
      );
      const wire = await text(url);
      expect(wire).not.toContain("forged");
      expect(wire).not.toContain("admin");
      expect(wire.startsWith("id: 1\ndata: fine\n\nevent: error\ndata: ")).toBe(true);
      const error = JSON.parse(wire.split("event: error\ndata: ")[1] ?? "") as object;
      expect(error).toMatchObject({ status: 500, error: { code: "INTERNAL" } });
      expect(reported).toHaveLength(1);
      expect(reported[0]).toMatchObject({ code: ErrorCode.INTERNAL });
      expect((reported[0] as Error).message).toMatch(/Invalid SSE (id|event)/);
      await new Promise((r) => setImmediate(r));
      expect(finallyRan).toBe(true);
    });
  }

  it("flushes each chunk before the next one is produced", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const url = await serve((res) =>
      writeSSE(
        res,
        (async function* () {
          yield "first";
          await gate;
          yield "second";
        })(),
      ),
    );
    const res = await fetch(url);
    const iterator = readSSEEvents(res.body as AsyncIterable<Uint8Array>);
    // The first event arrives while the producer still waits on the gate.
    expect((await iterator.next()).value).toMatchObject({ data: "first" });
    release();
    expect((await iterator.next()).value).toMatchObject({ data: "second" });
    expect((await iterator.next()).value).toMatchObject({ event: "done" });
  });

  it("ends with an error event (no id) when the iterable throws, hiding 500 details", async () => {
    const outcomes: SSEOutcome[] = [];
    const url = await serve(async (res) => {
      const outcome = await writeSSE(
        res,
        (async function* () {
          yield "partial";
          throw new NervaError(ErrorCode.RATE_LIMITED, "too many requests", {
            details: { retryAfterSeconds: 1 },
          });
        })(),
      );
      outcomes.push(outcome);
    });
    const { events } = await collect(url);
    expect(events.map((e) => [e.event, e.id])).toEqual([
      ["message", "1"],
      ["error", "1"], // a client's last event id stays the last real event's
    ]);
    expect(JSON.parse(events[1]?.data ?? "")).toMatchObject({
      status: 429,
      error: { code: "RATE_LIMITED" },
    });
    expect(outcomes).toEqual(["error"]);

    const url500 = await serve((res) =>
      writeSSE(
        res,
        (async function* () {
          yield* [];
          throw new Error("secret connection string at /srv/app/db.ts:12");
        })(),
      ),
    );
    const failed = await text(url500);
    expect(failed).toMatch(/^event: error\ndata: \{/);
    expect(failed).not.toMatch(/secret|\/srv|db\.ts|\bat\b.*:\d+/);
  });

  it("cancels the context and stops the producer when the client disconnects", async () => {
    const ctx = ExecContext.create();
    let finallyRan = false;
    let resolveOutcome!: (o: SSEOutcome) => void;
    const outcome = new Promise<SSEOutcome>((r) => (resolveOutcome = r));
    const url = await serve(async (res) => {
      resolveOutcome(
        await writeSSE(
          res,
          (async function* () {
            try {
              yield "tick";
              // Waits until the request is cancelled, as a well-behaved handler does.
              await new Promise((r) => ctx.signal.addEventListener("abort", r));
              yield "never sent";
            } finally {
              finallyRan = true;
            }
          })(),
          ctx,
          { heartbeatSeconds: false },
        ),
      );
    });
    const controller = new AbortController();
    const res = await fetch(url, { signal: controller.signal });
    const iterator = readSSEEvents(res.body as AsyncIterable<Uint8Array>);
    expect((await iterator.next()).value).toMatchObject({ data: "tick" });
    controller.abort();
    expect(await outcome).toBe("disconnected");
    expect(ctx.isCancelled()).toBe(true);
    await new Promise((r) => setTimeout(r, 20));
    expect(finallyRan).toBe(true);
  });

  it("pauses a producer whose client does not read, and ends when that client leaves mid-drain", async () => {
    const ctx = ExecContext.create();
    const chunk = "x".repeat(64 * 1024);
    let produced = 0;
    let returned = false;
    let resolveOutcome!: (o: SSEOutcome) => void;
    const outcome = new Promise<SSEOutcome>((r) => (resolveOutcome = r));
    const url = await serve(async (res) => {
      resolveOutcome(
        await writeSSE(
          res,
          (async function* () {
            try {
              for (;;) {
                produced++;
                yield chunk;
              }
            } finally {
              returned = true;
            }
          })(),
          ctx,
          { heartbeatSeconds: false },
        ),
      );
    });
    // A client that reads the headers and then nothing: the socket's buffers fill up.
    const req = http.get(url);
    const [res] = (await once(req, "response")) as [http.IncomingMessage];
    res.pause();
    let last = -1;
    while (produced !== last) {
      last = produced;
      await new Promise((r) => setTimeout(r, 100));
    }
    // The writer waits for a drain that never comes: a few MiB of socket buffers, not more.
    expect(produced).toBeLessThan(400);
    req.destroy();
    expect(await outcome).toBe("disconnected");
    expect(ctx.isCancelled()).toBe(true);
    await new Promise((r) => setImmediate(r));
    expect(returned).toBe(true);
    expect(produced).toBe(last);
  });

  it("writes heartbeat comments while the producer is idle", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const url = await serve((res) =>
      writeSSE(
        res,
        (async function* () {
          await gate;
          yield "late";
        })(),
        null,
        { heartbeatSeconds: 0.02 },
      ),
    );
    const res = await fetch(url);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toContain(": ping");
    release();
    let rest = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      rest += new TextDecoder().decode(value);
    }
    expect(rest).toContain("data: late");
  });
});
