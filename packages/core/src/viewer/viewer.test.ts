// The viewer over real HTTP (node:http on 127.0.0.1, port 0): its JSON API, who it serves, what
// it passes on, and that untrusted span names and attributes never come back as markup.
import { createServer, request, type IncomingMessage, type Server } from "node:http";
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExecContext } from "../context/exec-context.js";
import { isNervaError } from "../errors.js";
import { TraceStore, type TraceDetail } from "../tracing/trace-store.js";
import { createTraceViewer, isLoopbackRequest, type TraceViewer } from "./index.js";

const EVIL = `<img src=x onerror="window.__pwned=1">`;

async function listen(
  viewer: TraceViewer,
  withNext = true,
): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    if (!withNext) return viewer(req, res);
    viewer(req, res, () => {
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("the app");
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

/** A GET from a chosen local address (127.0.0.0/8 is all loopback) with chosen headers. */
function get(
  url: string,
  options: { localAddress?: string; headers?: Record<string, string>; method?: string } = {},
): Promise<{ status: number; headers: IncomingMessage["headers"]; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ...options, method: options.method ?? "GET" }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("trace viewer over HTTP", () => {
  const store = new TraceStore();
  const meter = {
    users: () => [
      { userId: "alice", requests: 2, inputTokens: 140, outputTokens: 30, costUsd: 0.0014 },
      { userId: null, requests: 1, inputTokens: 0, outputTokens: 0, costUsd: 0 },
    ],
  };
  const viewer = createTraceViewer({ store, meter });
  let url: string;
  let server: Server;
  let traceId: string;
  const base = () => `${url}/_nerva/traces`;

  beforeAll(async () => {
    ({ url, server } = await listen(viewer));
    const ctx = ExecContext.create({ userId: "alice", traceSink: store });
    await ctx.span("handle", async (inner) => {
      inner.recordTokens({ promptTokens: 140, completionTokens: 30, costUsd: 0.0014 });
      inner.event(EVIL, { payload: `</script><script>window.__pwned=2</script>` });
      await inner.span(EVIL, async () => undefined, { note: EVIL, long: "x".repeat(5000) });
    });
    traceId = ctx.traceId;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it("serves one self-contained page whose script and style only run with the response's nonce", async () => {
    for (const path of ["", "/"]) {
      const res = await get(base() + path);
      expect(res.status).toBe(200);
      expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
      const csp = String(res.headers["content-security-policy"]);
      const nonce = /script-src 'nonce-([^']+)'/.exec(csp)?.[1];
      expect(nonce).toBeDefined();
      expect(csp).toContain("default-src 'none'");
      expect(csp).not.toContain("unsafe-inline");
      expect(res.body).toContain(`<script nonce="${nonce}">`);
      expect(res.body).toContain(`<style nonce="${nonce}">`);
      expect(res.body).toContain('const BASE = "/_nerva/traces";');
      // nothing fetched from elsewhere: no src/href to another origin, no import
      expect(res.body).not.toMatch(/(src|href)=["']?(https?:)?\/\//);
      expect(res.body).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
    }
    const again = await get(base());
    expect(again.headers["content-security-policy"]).not.toBe(
      (await get(base())).headers["content-security-policy"],
    );
  });

  it("lists recent traces: time, root, duration, status, tokens, cost, user", async () => {
    const res = await get(`${base()}/api/traces`);
    expect(res.status).toBe(200);
    expect(res.headers["x-content-type-options"]).toBe("nosniff");
    const body = JSON.parse(res.body) as { traces: TraceDetail[]; meter: boolean };
    expect(body.meter).toBe(true);
    expect(body.traces).toHaveLength(1);
    expect(body.traces[0]).toMatchObject({
      traceId,
      rootName: "handle",
      status: "ok",
      userId: "alice",
      usage: { promptTokens: 140, completionTokens: 30, totalTokens: 170 },
    });
    expect(body.traces[0]!.durationMs).toBeGreaterThan(0);
    expect(body.traces[0]!.startMs).toBeGreaterThan(Date.now() - 60_000);
    expect(JSON.parse((await get(`${base()}/api/traces?user=bob`)).body).traces).toEqual([]);
    expect(
      JSON.parse((await get(`${base()}/api/traces?user=alice&limit=1`)).body).traces,
    ).toHaveLength(1);
    for (const bad of ["0", "1.5", "x", "100000"]) {
      const refused = await get(`${base()}/api/traces?limit=${bad}`);
      expect(refused.status).toBe(400);
      expect(JSON.parse(refused.body).error.code).toBe("INVALID_INPUT");
    }
  });

  it("gives a trace whole, and never a value as markup", async () => {
    const res = await get(`${base()}/api/traces/${traceId}`);
    expect(res.status).toBe(200);
    // `<` never appears in the body: every one is written \u003c, and parses back unchanged
    expect(res.body).not.toContain("<");
    const detail = JSON.parse(res.body) as TraceDetail & { readAtMs: number };
    expect(detail.spans.map((s) => [s.name, s.depth])).toEqual([
      ["handle", 0],
      [EVIL, 1],
    ]);
    expect(detail.spans[1]!.attributes["note"]).toBe(EVIL);
    expect(String(detail.spans[1]!.attributes["long"])).toMatch(
      /^x{2000}… \(3000 more characters\)$/,
    );
    expect(detail.events[0]).toMatchObject({
      name: EVIL,
      attributes: { payload: `</script><script>window.__pwned=2</script>` },
    });
    expect(detail.readAtMs).toBeGreaterThanOrEqual(detail.startMs);

    expect((await get(`${base()}/api/traces/${"0".repeat(31)}1`)).status).toBe(404);
    const bad = await get(`${base()}/api/traces/..%2F..%2Fetc`);
    expect(bad.status).toBe(400);
  });

  it("bounds every value it sends: array items and their number, keys, event attributes", async () => {
    const big = "y".repeat(1_000_000);
    const many = Array.from({ length: 5_000 }, (_, i) => i);
    const huge = { nested: big };
    const ctx = ExecContext.create({ traceSink: store });
    await ctx.span("bulky", async (inner) => {
      const span = inner.currentSpan!;
      // Attribute values come from user code and other tracers: arrays and objects do reach a span
      // at run time, whatever its type says.
      span.setAttribute("three", [big, big, big] as never);
      span.setAttribute("many", many as never);
      span.setAttribute("object", huge as never);
      for (let i = 0; i < 1_000; i++) span.setAttribute(`k${i}`, i);
      inner.event("bulky.event", { items: [big, big] as never, deep: [[big]] as never });
    });
    const res = await get(`${base()}/api/traces/${ctx.traceId}`);
    expect(res.status).toBe(200);
    expect(res.body.length).toBeLessThan(100_000);
    const detail = JSON.parse(res.body) as TraceDetail;
    const attrs = detail.spans[0]!.attributes as Record<string, unknown>;
    const three = attrs["three"] as string[];
    expect(three).toHaveLength(3);
    for (const item of three) expect(item).toMatch(/^y{2000}… \(998000 more characters\)$/);
    const listed = attrs["many"] as unknown[];
    expect(listed.slice(0, 3)).toEqual([0, 1, 2]);
    expect(listed.at(-1)).toBe("… (4900 more items)");
    expect(listed).toHaveLength(101);
    expect(String(attrs["object"]).length).toBeLessThan(2_100);
    expect(Object.keys(attrs).length).toBeLessThanOrEqual(201);
    expect(attrs["nerva.viewer.omitted_attributes"]).toBe(1_003 - 200);
    const event = detail.events[0]!.attributes as Record<string, unknown>;
    expect((event["items"] as string[]).every((v) => v.length < 2_100)).toBe(true);
    expect(JSON.stringify(event["deep"]).length).toBeLessThan(2_100);
  });

  it("serves the per-user table from the meter, and none without one", async () => {
    const res = JSON.parse((await get(`${base()}/api/users`)).body);
    expect(res.users).toEqual(meter.users());
    const bare = await listen(createTraceViewer({ store, basePath: "/ops/traces" }));
    try {
      expect(JSON.parse((await get(`${bare.url}/ops/traces/api/users`)).body)).toEqual({
        users: null,
      });
      expect(JSON.parse((await get(`${bare.url}/ops/traces/api/traces`)).body).meter).toBe(false);
    } finally {
      bare.server.close();
    }
  });

  it("passes other paths to next, answers 404 under its path and without next", async () => {
    for (const path of ["/", "/chat", "/_nerva/tracesx", "/_nerva"]) {
      const res = await get(url + path);
      expect([res.status, res.body]).toEqual([200, "the app"]);
    }
    const unknown = await get(`${base()}/api/nope`);
    expect(unknown.status).toBe(404);
    const alone = await listen(viewer, false);
    try {
      expect((await get(`${alone.url}/elsewhere`)).status).toBe(404);
      expect((await get(`${alone.url}/_nerva/traces/api/traces`)).status).toBe(200);
    } finally {
      alone.server.close();
    }
  });

  it("answers only GET and HEAD", async () => {
    const post = await get(`${base()}/api/traces`, { method: "POST" });
    expect(post.status).toBe(405);
    expect(post.headers["allow"]).toBe("GET, HEAD");
    const head = await get(base(), { method: "HEAD" });
    expect([head.status, head.body]).toEqual([200, ""]);
  });

  it("serves loopback clients that came through no proxy by default, and denies with no detail", async () => {
    expect((await get(base(), { localAddress: "127.0.0.2" })).status).toBe(200);
    for (const header of ["x-forwarded-for", "forwarded", "x-real-ip"]) {
      const res = await get(`${base()}/api/traces`, { headers: { [header]: "203.0.113.9" } });
      expect(res.status).toBe(403);
      expect(JSON.parse(res.body)).toEqual({
        error: { code: "PERMISSION_DENIED", message: "Forbidden." },
      });
    }
    const from = (remoteAddress: string, headers = {}) =>
      isLoopbackRequest({ socket: { remoteAddress }, headers } as unknown as IncomingMessage);
    expect(from("127.0.0.1")).toBe(true);
    expect(from("::1")).toBe(true);
    expect(from("::ffff:127.0.0.1")).toBe(true);
    expect(from("10.1.2.3")).toBe(false);
    expect(from("::ffff:192.168.1.4")).toBe(false);
    expect(from("127.0.0.1", { "x-forwarded-for": "1.2.3.4" })).toBe(false);
  });

  it("denies a loopback client whose Host names another site (a DNS-rebinding page)", async () => {
    // A page on attacker.example whose name was rebound to 127.0.0.1 reads it as same-origin.
    const port = new URL(url).port;
    for (const host of [`attacker.example:${port}`, "attacker.example", `localhost.evil:${port}`]) {
      const res = await get(`${base()}/api/traces`, { headers: { host } });
      expect(res.status, host).toBe(403);
      expect(JSON.parse(res.body)).toEqual({
        error: { code: "PERMISSION_DENIED", message: "Forbidden." },
      });
    }
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, "127.1.2.3", "LOCALHOST"]) {
      expect((await get(`${base()}/api/traces`, { headers: { host } })).status, host).toBe(200);
    }
    const from = (headers: Record<string, string>, remoteAddress = "127.0.0.1") =>
      isLoopbackRequest({ socket: { remoteAddress }, headers } as unknown as IncomingMessage);
    expect(from({ host: "[::1]:3000" }, "::1")).toBe(true);
    expect(from({ host: "[::1]" }, "::1")).toBe(true);
    expect(from({})).toBe(true); // no Host at all (HTTP/1.0): not a browser page
    expect(from({ host: "[::2]:3000" }, "::1")).toBe(false);
    expect(from({ host: "10.0.0.1:3000" })).toBe(false);
  });

  it("asks a custom allow (sync or async); one that throws denies", async () => {
    const cases: [TraceViewer, number][] = [
      [createTraceViewer({ store, allow: () => false }), 403],
      [createTraceViewer({ store, allow: async () => true }), 200],
      [createTraceViewer({ store, allow: (req) => req.headers["x-admin"] === "yes" }), 403],
      [
        createTraceViewer({
          store,
          allow: () => {
            throw new Error("auth service down");
          },
        }),
        403,
      ],
    ];
    for (const [v, status] of cases) {
      const s = await listen(v);
      try {
        const res = await get(`${s.url}/_nerva/traces/api/traces`);
        expect(res.status).toBe(status);
        expect(res.body).not.toContain("auth service down");
      } finally {
        s.server.close();
      }
    }
  });

  it("keeps a failing store's error to itself", async () => {
    const broken = createTraceViewer({
      store: {
        traces: () => {
          throw new Error("/secret/path exploded");
        },
        trace: () => null,
      },
    });
    const s = await listen(broken);
    try {
      const res = await get(`${s.url}/_nerva/traces/api/traces`);
      expect(res.status).toBe(500);
      expect(JSON.parse(res.body)).toEqual({
        error: { code: "INTERNAL", message: "The trace viewer failed to answer." },
      });
    } finally {
      s.server.close();
    }
  });

  it("refuses bad options with INVALID_OPTIONS naming the field", () => {
    const bad: [unknown, RegExp][] = [
      [{}, /options\.store/],
      [{ store: {} }, /options\.store/],
      [{ store, basePath: "/traces/" }, /options\.basePath/],
      [{ store, basePath: "traces" }, /options\.basePath/],
      [{ store, basePath: '/a"b' }, /options\.basePath/],
      [{ store, allow: true }, /options\.allow/],
      [{ store, meter: {} }, /options\.meter/],
      [{ store, bogus: 1 }, /bogus/],
    ];
    for (const [options, message] of bad) {
      try {
        createTraceViewer(options as never);
        expect.unreachable(String(message));
      } catch (err) {
        expect(isNervaError(err) && err.code).toBe("INVALID_OPTIONS");
        expect((err as Error).message).toMatch(message);
      }
    }
    expect(viewer.basePath).toBe("/_nerva/traces");
  });
});
