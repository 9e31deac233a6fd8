// Every way an SSE read or write ends closes what it reads from: the reader's HTTP response (a
// real server on 127.0.0.1 that records when each response's socket closes, and never ends its
// responses itself) and the event source's producer.
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { createSSEEventSource } from "./sse-event-source.js";
import { readSSEEvents } from "./sse-client.js";

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

describe("createSSEEventSource closes its source however the stream ends", () => {
  it("a chunk it cannot send ends the stream with an error event, and stops the producer", async () => {
    const ctx = ExecContext.create();
    let finallyRan = false;
    let deep: unknown = "leaf";
    for (let i = 0; i < 100_000; i++) deep = [deep];
    const source = (async function* () {
      try {
        yield "fine";
        yield deep;
        yield "never taken";
      } finally {
        finallyRan = true;
      }
    })();
    const events = createSSEEventSource(source, { ctx });
    const seen: string[] = [];
    for await (const e of events) seen.push(e.type);
    expect(seen).toEqual(["message", "error"]);
    expect(events.outcome).toBe("error");
    expect(ctx.isCancelled()).toBe(true);
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(finallyRan).toBe(true);
  });

  it("a done mapper that throws ends the stream with an error event, source closed", async () => {
    let finallyRan = false;
    const source = (async function* () {
      try {
        yield "a";
        return "the end";
      } finally {
        finallyRan = true;
      }
    })();
    const events = createSSEEventSource(source, {
      done: () => {
        throw new Error("mapper broke");
      },
    });
    const seen: string[] = [];
    for await (const e of events) seen.push(e.type);
    expect(seen).toEqual(["message", "error"]);
    expect(finallyRan).toBe(true);
  });
});
