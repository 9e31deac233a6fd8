import { once } from "node:events";
import http, { type IncomingHttpHeaders } from "node:http";
import net from "node:net";
import v8 from "node:v8";
import { runInNewContext } from "node:vm";
import { beforeAll, describe, expect, it } from "vitest";
import { readSSEEvents, type SSEEvent } from "./sse-reader.js";
import {
  BRIDGE_CONTRACT_SECRET,
  FLOOD_CHUNKS,
  FLOOD_CHUNK_BYTES,
  mintBridgeContractToken,
  sleep,
  type BridgeContractRoutes,
} from "./bridge-contract-routes.js";

/** What the bad-client cases need from {@link describeBridgeContract}'s suite. */
export interface BadClientEnv {
  /** Starts a server with the app's auth at the first placement (closed with the suite). */
  serve(): Promise<{ url: string }>;
  readonly routes: BridgeContractRoutes;
  /** Every error the bridge's `onError` received, in order. */
  readonly reported: readonly { error: unknown; requestId: string | null }[];
  /** Request ids whose handler saw its context cancelled. */
  readonly aborted: readonly string[];
  /** Paths serving the stream of `POST /chat/stream` (see `BridgeContractOptions.streamPaths`). */
  readonly streamPaths: readonly string[];
}

/** What {@link sendRawRequest} resolves with. */
export interface RawAnswer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly text: string;
}

/**
 * One request over node:http; resolves with the answer even if the server stops reading the body
 * (a 413 answered before the upload ended). Shared with the example apps' bad-client suite.
 *
 * @example
 * const answer = await sendRawRequest(url, "/chat", { method: "POST", body: "{" });
 */
export function sendRawRequest(
  url: string,
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: string },
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = http.request(`${url}${path}`, {
      method: init.method ?? "GET",
      headers: init.headers,
    });
    req.on("response", (res) => {
      answered = true;
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
      res.on("error", reject);
    });
    // A server may answer (413) and close before it read a large body: the write then fails.
    req.on("error", (err) => (answered ? undefined : reject(err)));
    req.end(init.body);
  });
}

const bearer = (sub: string) => `Bearer ${mintBridgeContractToken(sub)}`;
const JSON_TYPE = "application/json";

/** A request of each kind a client may send wrong, and the answer every bridge must give. */
const BAD_REQUESTS: readonly {
  name: string;
  path: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  status: number;
  code: string;
  /** An unexpected error: reported to `onError` exactly once. */
  reported?: true;
}[] = [
  {
    name: "malformed JSON",
    path: "/chat",
    headers: { "content-type": JSON_TYPE },
    body: '{"message": "hel',
    status: 400,
    code: "INVALID_INPUT",
  },
  {
    name: "a bare JSON string",
    path: "/chat",
    headers: { "content-type": JSON_TYPE },
    body: '"hello"',
    status: 400,
    code: "INVALID_INPUT",
  },
  {
    name: "a 10 MB body",
    path: "/chat",
    headers: { "content-type": JSON_TYPE },
    body: JSON.stringify({ message: "x".repeat(10 * 1024 * 1024) }),
    status: 413,
    code: "PAYLOAD_TOO_LARGE",
  },
  {
    // Express's body-parser inflates it and hands on zlib's own error (code Z_DATA_ERROR).
    name: "a gzip body that does not decompress",
    path: "/chat",
    headers: { "content-type": JSON_TYPE, "content-encoding": "gzip" },
    body: "not gzip",
    status: 400,
    code: "INVALID_INPUT",
  },
  {
    name: "a text/plain body",
    path: "/chat",
    headers: { "content-type": "text/plain" },
    body: "hello",
    status: 415,
    code: "UNSUPPORTED_MEDIA_TYPE",
  },
  {
    name: "a text/plain body to the stream",
    path: "/chat/stream",
    headers: { "content-type": "text/plain" },
    body: "hello",
    status: 415,
    code: "UNSUPPORTED_MEDIA_TYPE",
  },
  {
    name: "no body",
    path: "/chat",
    headers: { "content-length": "0" },
    status: 400,
    code: "INVALID_INPUT",
  },
  {
    name: "message 42",
    path: "/chat",
    headers: { "content-type": JSON_TYPE },
    body: '{"message":42}',
    status: 400,
    code: "INVALID_INPUT",
  },
  {
    name: "message null",
    path: "/chat",
    headers: { "content-type": JSON_TYPE },
    body: '{"message":null}',
    status: 400,
    code: "INVALID_INPUT",
  },
  {
    name: "message {}",
    path: "/chat",
    headers: { "content-type": JSON_TYPE },
    body: '{"message":{}}',
    status: 400,
    code: "INVALID_INPUT",
  },
  {
    name: "message 42 to the stream",
    path: "/chat/stream",
    headers: { "content-type": JSON_TYPE },
    body: '{"message":42}',
    status: 400,
    code: "INVALID_INPUT",
  },
  {
    name: "a TypeError in a middleware",
    path: "/whoami",
    method: "GET",
    headers: { "x-contract-crash": "middleware" },
    status: 500,
    code: "INTERNAL",
    reported: true,
  },
  {
    name: "an error thrown in a route",
    path: "/crash",
    method: "GET",
    status: 500,
    code: "INTERNAL",
    reported: true,
  },
];

/**
 * Signs of internals in an answer to a client: a stack frame, an absolute path or URL of a file,
 * a parser's message, a connection string. No bridge may send any of them.
 *
 * @example
 * for (const sign of INTERNAL_SIGNS) expect(answer.text).not.toMatch(sign);
 */
export const INTERNAL_SIGNS: readonly RegExp[] = [
  /\bat [\w.<>]+ \(/,
  /\n\s+at /,
  /(?:^|[\s"'(=])\/(?:srv|home|usr|work|tmp|app|opt|var|root|node_modules)\//,
  /file:\/\//,
  /node_modules/,
  /TypeError|SyntaxError|Unexpected (?:token|end)|in JSON at position/,
  /postgres:/,
  /\bZ_[A-Z_]+\b|incorrect header check|unexpected end of file/,
];

/** A function that runs a full garbage collection (exposed for this process only). */
function exposeGc(): () => void {
  v8.setFlagsFromString("--expose-gc");
  return runInNewContext("gc") as () => void;
}

/** Heap plus memory outside it (Buffers): what a stream buffered for a client costs. */
function memoryBytes(gc: () => void): number {
  gc();
  gc();
  const { heapUsed, external } = process.memoryUsage();
  return heapUsed + external;
}

/**
 * Opens `POST /chat/stream` for the `flood` agent on a raw socket, reads the response head, then
 * never reads again. Resolves with the socket and the request id of the answer.
 */
async function floodWithoutReading(
  url: string,
  path: string,
): Promise<{ socket: net.Socket; requestId: string }> {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  socket.on("error", () => undefined);
  await once(socket, "connect");
  const body = JSON.stringify({ message: "flood" });
  socket.write(
    [
      `POST ${path} HTTP/1.1`,
      `host: ${hostname}:${port}`,
      `authorization: ${bearer("flood-user")}`,
      `content-type: ${JSON_TYPE}`,
      `content-length: ${Buffer.byteLength(body)}`,
      "",
      body,
    ].join("\r\n"),
  );
  const requestId = await new Promise<string>((resolve, reject) => {
    let head = "";
    const onData = (chunk: Buffer): void => {
      head += chunk.toString("latin1");
      const end = head.indexOf("\r\n\r\n");
      if (end === -1) return;
      socket.off("data", onData);
      socket.pause(); // from here on, the client reads nothing
      const id = /\r\nx-request-id: *([^\r\n]+)/i.exec(head.slice(0, end))?.[1];
      if (id === undefined) reject(new Error(`no x-request-id in ${head.slice(0, end)}`));
      else resolve(id);
    };
    socket.on("data", onData);
    socket.once("close", () => reject(new Error(`closed before the response head: ${head}`)));
  });
  return { socket, requestId };
}

/** Polls `read` until it stops changing for `quietMs` (or `maxMs` passed); its last value. */
async function settled(read: () => number, quietMs: number, maxMs: number): Promise<number> {
  let last = read();
  let still = 0;
  for (let waited = 0; waited < maxMs && still < quietMs; waited += 50) {
    await sleep(50);
    const now = read();
    still = now === last ? still + 50 : 0;
    last = now;
  }
  return last;
}

/**
 * The contract's cases about clients that behave badly and errors nobody planned for: every error
 * answered with the Nerva JSON body, the right status and no internals; a client that stops
 * reading a stream pauses its producer; a stream that fails midway reported once.
 */
export function describeBadClients(env: BadClientEnv): void {
  describe("bad clients and unexpected errors", () => {
    let url: string;
    beforeAll(async () => {
      ({ url } = await env.serve());
    });

    it.each(BAD_REQUESTS)(
      "answers $name with $status $code, the request id and no internals",
      async (bad) => {
        const headers = { authorization: bearer("mallory"), ...bad.headers };
        const answer = await sendRawRequest(url, bad.path, {
          method: bad.method ?? "POST",
          headers,
          body: bad.body,
        });
        expect(answer.status, answer.text).toBe(bad.status);
        expect(answer.headers["content-type"]).toMatch(/^application\/json/);
        const requestId = answer.headers["x-request-id"];
        expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
        const body = JSON.parse(answer.text) as { error: Record<string, unknown> };
        expect(body.error).toMatchObject({ code: bad.code, requestId });
        expect(typeof body.error.message).toBe("string");
        expect(answer.text).not.toContain(BRIDGE_CONTRACT_SECRET);
        for (const sign of INTERNAL_SIGNS) expect(answer.text).not.toMatch(sign);
        if (bad.reported === true) {
          await sleep(20);
          const reports = env.reported.filter((r) => r.requestId === requestId);
          expect(reports).toHaveLength(1);
          expect(String((reports[0]?.error as Error).message)).toContain(BRIDGE_CONTRACT_SECRET);
        }
      },
    );

    it.each(env.streamPaths)("a stream that fails midway calls onError once (%s)", async (path) => {
      const res = await fetch(`${url}${path}`, {
        method: "POST",
        headers: { authorization: bearer("ursula"), "content-type": JSON_TYPE },
        body: JSON.stringify({ message: "explode" }),
      });
      const requestId = res.headers.get("x-request-id");
      const events: SSEEvent[] = [];
      for await (const e of readSSEEvents(res.body as AsyncIterable<Uint8Array>)) events.push(e);
      expect(events.map((e) => e.event)).toEqual(["message", "error"]);
      const last = events[1]?.data ?? "";
      expect(JSON.parse(last)).toMatchObject({
        status: 500,
        error: { code: "INTERNAL", requestId },
      });
      expect(last).not.toContain(BRIDGE_CONTRACT_SECRET);
      for (const sign of INTERNAL_SIGNS) expect(last).not.toMatch(sign);
      await sleep(50);
      const reports = env.reported.filter((r) => r.requestId === requestId);
      expect(reports).toHaveLength(1);
      expect(String((reports[0]?.error as Error).message)).toContain(BRIDGE_CONTRACT_SECRET);
    });

    it.each(env.streamPaths)(
      "a client that stops reading: heap bounded, producer paused (%s)",
      { timeout: 60_000 },
      async (path) => {
        const gc = exposeGc();
        const before = memoryBytes(gc);
        const { socket, requestId } = await floodWithoutReading(url, path);
        try {
          const read = () => env.routes.produced(requestId);
          // The producer runs until the socket's buffers are full, then must wait. A machine
          // under load may stall it for a while before that: settle again if it moved on.
          let produced = await settled(read, 1000, 30_000);
          for (let tries = 0; tries < 3; tries++) {
            await sleep(500);
            if (read() === produced) break;
            produced = await settled(read, 1000, 30_000);
          }
          const grownBytes = memoryBytes(gc) - before;
          expect(produced).toBeGreaterThan(0);
          // 256 chunks of 64 KB = 16 MB: socket and stream buffers, far from the 4,000 on offer.
          expect(produced).toBeLessThanOrEqual(256);
          expect(FLOOD_CHUNK_BYTES * produced).toBeLessThan(64 * 1024 * 1024);
          expect(grownBytes).toBeLessThan(64 * 1024 * 1024);
          // Paused, not merely slow: nothing more is produced while the client does not read.
          await sleep(500);
          expect(read()).toBe(produced);
          expect(produced).toBeLessThan(FLOOD_CHUNKS);
        } finally {
          socket.destroy();
        }
        // The client left: the producer is cancelled, not left waiting forever.
        for (let i = 0; i < 500 && !env.aborted.includes(requestId); i++) await sleep(10);
        expect(env.aborted).toContain(requestId);
      },
    );
  });
}
