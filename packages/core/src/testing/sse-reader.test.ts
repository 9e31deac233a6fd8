// The Server-Sent Events reader (a client): the wire form it reads back, a server it does not
// trust (bounded lines and events), and every way a read ends closing the response (a real
// server on 127.0.0.1 that records when each response's socket closes).
import { once } from "node:events";
import http, { type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ErrorCode, NervaError } from "../errors.js";
import { formatSSE } from "../http/sse.js";
import { readSSEEvents, type SSEEvent } from "./sse-reader.js";

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

describe("formatSSE / readSSEEvents", () => {
  it("round-trips multi-line data, leading spaces and event names", async () => {
    const wire =
      formatSSE({ data: " hello\nworld" }) +
      ": comment\n\n" +
      formatSSE({ event: "done", id: "7", data: "{}" });
    const events: SSEEvent[] = [];
    // Split the wire into 3-byte pieces, including between "\r" and "\n".
    const pieces = (async function* () {
      const bytes = new TextEncoder().encode(wire.replaceAll("\n", "\r\n"));
      for (let i = 0; i < bytes.length; i += 3) yield bytes.slice(i, i + 3);
    })();
    for await (const e of readSSEEvents(pieces)) events.push(e);
    expect(events).toEqual([
      { event: "message", data: " hello\nworld", id: null },
      { event: "done", data: "{}", id: "7" },
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
      const wire = new TextEncoder().encode(formatSSE({ data }));
      for (let i = 0; i < wire.length; i += 1000) yield wire.slice(i, i + 1000);
    })();
    const events: SSEEvent[] = [];
    for await (const e of readSSEEvents(pieces, { maxEventChars: 100_006 })) events.push(e);
    expect(events).toEqual([{ event: "message", data, id: null }]);
  });
});

let server: http.Server;
let url = "";
const closed = new Map<string, Promise<void>>();
beforeAll(async () => {
  server = http.createServer((req, res) => {
    closed.set(req.url ?? "", new Promise((resolve) => res.once("close", () => resolve())));
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write("data: one\n\ndata: two\n\ndata: three\n\n");
    // and then nothing: the response stays open until the client hangs up
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

let n = 0;
async function open(): Promise<{ body: AsyncIterable<Uint8Array>; closed: Promise<void> }> {
  const path = `/s${++n}`;
  const res = await fetch(url + path);
  return { body: res.body as AsyncIterable<Uint8Array>, closed: closed.get(path)! };
}

describe("readSSEEvents closes the response however the read ends", () => {
  it("the reader breaks out of for-await", async () => {
    const { body, closed } = await open();
    for await (const e of readSSEEvents(body)) if (e.data === "two") break;
    await closed;
  });

  it("the reader throws inside for-await", async () => {
    const { body, closed } = await open();
    await expect(
      (async () => {
        for await (const e of readSSEEvents(body)) if (e.data === "one") throw new Error("mine");
      })(),
    ).rejects.toThrow("mine");
    await closed;
  });

  it("the server sends more than maxEventChars", async () => {
    const { body, closed } = await open();
    const read = async () => {
      for await (const _ of readSSEEvents(body, { maxEventChars: 4 })) void _;
    };
    await expect(read()).rejects.toMatchObject({ code: "INVALID_INPUT" });
    await closed;
  });

  it("the options are refused", async () => {
    const { body, closed } = await open();
    await expect(readSSEEvents(body, { maxEventChars: 0 }).next()).rejects.toMatchObject({
      code: "INVALID_OPTIONS",
    });
    await closed;
  });

  it("the reader returns before it read anything", async () => {
    const { body, closed } = await open();
    const events = readSSEEvents(body);
    await events.return();
    await closed;
  });
});
