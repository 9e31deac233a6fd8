import { once } from "node:events";
import http, { type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import { formatSSEEvent, type SSEOutcome } from "./sse-event-source.js";
import { writeSSE } from "./sse.js";
import { readSSEEvents, type SSEEvent } from "./sse-client.js";

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

describe("formatSSEEvent / readSSEEvents", () => {
  it("round-trips multi-line data, leading spaces and event names", async () => {
    const wire = formatSSEEvent(" hello\nworld") + ": comment\n\n" + formatSSEEvent("{}", "done");
    const events: SSEEvent[] = [];
    // Split the wire into 3-byte pieces, including between "\r" and "\n".
    const pieces = (async function* () {
      const bytes = new TextEncoder().encode(wire.replaceAll("\n", "\r\n"));
      for (let i = 0; i < bytes.length; i += 3) yield bytes.slice(i, i + 3);
    })();
    for await (const e of readSSEEvents(pieces)) events.push(e);
    expect(events).toEqual([
      { event: "message", data: " hello\nworld", id: null },
      { event: "done", data: "{}", id: null },
    ]);
  });
});

describe("readSSEEvents against a server that misbehaves", () => {
  /** A server sending `pieces` of 64 KiB of `text`, then a blank line, never a line end before. */
  async function flood(text: string, pieces: number): Promise<string> {
    return serve(async (res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      const piece = text.repeat(Math.ceil(65536 / text.length)).slice(0, 65536);
      for (let i = 0; i < pieces && !res.destroyed; i++) {
        if (!res.write(piece)) await once(res, "drain");
      }
      res.end("\n\n");
    });
  }

  it("refuses a line longer than maxEventChars with INVALID_INPUT, instead of buffering it", async () => {
    const url = await flood("x", 64); // 4 MiB without a line end
    const res = await fetch(url);
    const read = async () => {
      const events: SSEEvent[] = [];
      const body = res.body as AsyncIterable<Uint8Array>;
      for await (const e of readSSEEvents(body, { maxEventChars: 1024 * 1024 })) events.push(e);
      return events;
    };
    const err = await read().then(
      (events) => new Error(`read ${events.length} events`),
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(NervaError);
    expect(err).toMatchObject({ code: ErrorCode.INVALID_INPUT });
    expect((err as Error).message).toMatch(/maxEventChars/);
  });

  it("refuses an event whose data lines add up past maxEventChars", async () => {
    const url = await flood("data: 0123456789abcdef\n", 32); // 2 MiB of short data lines
    const res = await fetch(url);
    const events: SSEEvent[] = [];
    const body = res.body as AsyncIterable<Uint8Array>;
    await expect(
      (async () => {
        for await (const e of readSSEEvents(body, { maxEventChars: 1024 * 1024 })) events.push(e);
      })(),
    ).rejects.toMatchObject({ code: ErrorCode.INVALID_INPUT });
    expect(events).toEqual([]);
  });

  it("reads an event just under the limit", async () => {
    const data = "y".repeat(100_000);
    const pieces = (async function* () {
      const wire = new TextEncoder().encode(formatSSEEvent(data));
      for (let i = 0; i < wire.length; i += 1000) yield wire.slice(i, i + 1000);
    })();
    const events: SSEEvent[] = [];
    for await (const e of readSSEEvents(pieces, { maxEventChars: 100_006 })) events.push(e);
    expect(events).toEqual([{ event: "message", data, id: null }]);
  });
});

describe("writeSSE over a real HTTP server", () => {
  it("sends SSE headers, one event per chunk as produced, and a final done event", async () => {
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
    expect(events.map((e) => [e.event, e.data])).toEqual([
      ["message", "Hello"],
      ["message", " wor\nld"],
      ["done", JSON.stringify({ requestId: ctx.requestId, result: { status: "success" } })],
    ]);
  });

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

  it("ends with an error event when the iterable throws, hiding 500 details", async () => {
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
    expect(events.map((e) => e.event)).toEqual(["message", "error"]);
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
          throw new Error("secret connection string");
        })(),
      ),
    );
    const failed = await collect(url500);
    expect(failed.events.map((e) => e.event)).toEqual(["error"]);
    expect(failed.events[0]?.data).not.toMatch(/secret/);
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
