import { once } from "node:events";
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import { HttpBridge, defineContextGetter, type RequestScope } from "./bridge.js";
import type { NervaHttpOptions } from "./options.js";
import { toHttpError } from "./status.js";

type Req = IncomingMessage & { user?: unknown };
type Handler = (req: Req, res: ServerResponse, scope: RequestScope<Req>) => void | Promise<void>;

const servers: http.Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** A plain node:http server using the bridge the way the framework bridges do. */
async function serve(options: NervaHttpOptions<Req>, handler: Handler): Promise<string> {
  const bridge = new HttpBridge<Req>({ onError: () => undefined, ...options });
  const server = http.createServer((req: Req, res) => {
    const scope = bridge.begin(req, res);
    const user = req.headers["x-test-user"];
    if (typeof user === "string") req.user = { id: user };
    Promise.resolve()
      .then(() => handler(req, res, scope))
      .catch((err: unknown) => {
        const { status, headers, body } = toHttpError(err, scope.requestId);
        res.writeHead(status, { ...headers, "content-type": "application/json" });
        res.end(JSON.stringify(body));
      });
  });
  servers.push(server);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const echo: Handler = (req, res, scope) => {
  const ctx = scope.context(req);
  res.setHeader("content-type", "application/json");
  res.end(
    JSON.stringify({
      userId: ctx.userId,
      requestId: ctx.requestId,
      traceId: ctx.traceId,
      parentSpan: ctx.currentSpanId,
    }),
  );
};

describe("HttpBridge over a real HTTP server", () => {
  it("returns the request id in a header matching ctx.requestId", async () => {
    const url = await serve({}, echo);
    const res = await fetch(url, { headers: { "x-request-id": "client-chosen" } });
    const body = (await res.json()) as { requestId: string; userId: string | null };
    expect(body.requestId).not.toBe("client-chosen");
    expect(res.headers.get("x-request-id")).toBe(body.requestId);
    expect(body.userId).toBeNull();
  });

  it("reuses a well-formed client request id only with trustRequestId", async () => {
    const url = await serve({ trustRequestId: true }, echo);
    const ok = await fetch(url, { headers: { "x-request-id": "abc-123" } });
    expect(((await ok.json()) as { requestId: string }).requestId).toBe("abc-123");
    const bad = await fetch(url, { headers: { "x-request-id": "a b\tc" } });
    expect(((await bad.json()) as { requestId: string }).requestId).not.toBe("a b\tc");
  });

  it("joins the caller's trace from traceparent", async () => {
    const url = await serve({}, echo);
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const res = await fetch(url, {
      headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
    });
    expect(await res.json()).toMatchObject({ traceId, parentSpan: "00f067aa0ba902b7" });
    const fresh = (await (await fetch(url)).json()) as { traceId: string };
    expect(fresh.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(fresh.traceId).not.toBe(traceId);
  });

  it("answers 401 with requireAuth and never an anonymous context after a failure", async () => {
    const url = await serve({ requireAuth: true }, (req, res, scope) => {
      let first: unknown;
      try {
        scope.context(req);
      } catch (err) {
        first = err;
      }
      if (first === undefined) return echo(req, res, scope);
      // A second read must fail the same way, not fall back to anonymous.
      expect(() => scope.context(req)).toThrow(first as Error);
      throw first;
    });
    const res = await fetch(url);
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe("Bearer");
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe(
      ErrorCode.UNAUTHENTICATED,
    );
    const ok = await fetch(url, { headers: { "x-test-user": "u1" } });
    expect(((await ok.json()) as { userId: string }).userId).toBe("u1");
  });

  it("keeps the status of an error thrown by resolve, and answers 500 for others", async () => {
    const url = await serve(
      {
        resolve: (req) => {
          if (req.headers["x-kind"] === "teapot")
            throw Object.assign(new Error("no"), { status: 418 });
          if (req.headers["x-kind"] === "denied")
            throw new NervaError(ErrorCode.PERMISSION_DENIED, "banned user");
          throw new Error("database down");
        },
      },
      echo,
    );
    const status = async (kind: string) =>
      (await fetch(url, { headers: { "x-kind": kind } })).status;
    expect(await status("teapot")).toBe(418);
    expect(await status("denied")).toBe(403);
    const res = await fetch(url, { headers: { "x-kind": "crash" } });
    expect(res.status).toBe(500);
    expect(await res.text()).not.toMatch(/database/);
  });

  it("refuses a context read before authentication set the user", async () => {
    const url = await serve({}, (req, res, scope) => {
      scope.context(req); // e.g. a logging middleware placed before auth
      req.user = { id: "late" }; // auth runs afterwards
      return echo(req, res, scope);
    });
    const res = await fetch(url);
    expect(res.status).toBe(500);
  });

  it("cancels the context when the client disconnects before the response", async () => {
    let seen: ExecContext | null = null;
    let resolveAborted!: (reason: unknown) => void;
    const aborted = new Promise((r) => (resolveAborted = r));
    const url = await serve({}, (req, _res, scope) => {
      const ctx = scope.context(req);
      seen = ctx;
      ctx.signal.addEventListener("abort", () => resolveAborted(ctx.signal.reason));
      // Never answers: the client gives up first.
    });
    const client = http.get(url);
    client.on("error", () => undefined);
    await new Promise((r) => setTimeout(r, 50));
    client.destroy();
    const reason = (await aborted) as NervaError;
    expect(reason.code).toBe(ErrorCode.CANCELLED);
    expect((seen as ExecContext | null)?.isCancelled()).toBe(true);
  });

  it("cancels a context first read after the client left", async () => {
    let resolveCtx!: (ctx: ExecContext) => void;
    const late = new Promise<ExecContext>((r) => (resolveCtx = r));
    const url = await serve({}, (req, res, scope) => {
      res.once("close", () => resolveCtx(scope.context(req)));
    });
    const client = http.get(url);
    client.on("error", () => undefined);
    await new Promise((r) => setTimeout(r, 50));
    client.destroy();
    expect((await late).isCancelled()).toBe(true);
  });

  it("disposes without aborting when the response finishes", async () => {
    let ctx: ExecContext | null = null;
    let child: ExecContext | null = null;
    let resolveClosed!: () => void;
    const closed = new Promise<void>((r) => (resolveClosed = r));
    const url = await serve({ cancelOnDisconnect: true }, (req, res, scope) => {
      ctx = scope.context(req);
      child = ctx.child("background");
      res.once("close", () => setImmediate(resolveClosed));
      res.end("ok");
    });
    expect(await (await fetch(url)).text()).toBe("ok");
    await closed;
    expect((ctx as ExecContext | null)?.isCancelled()).toBe(false);
    expect((ctx as ExecContext | null)?.signal.aborted).toBe(false);
    // dispose() cancels children still running when their parent request finished.
    expect((child as ExecContext | null)?.isCancelled()).toBe(true);
  });

  it("gives each request its own context under concurrency", async () => {
    const url = await serve({}, async (req, res, scope) => {
      await new Promise((r) => setTimeout(r, Math.random() * 10));
      return echo(req, res, scope);
    });
    const users = Array.from({ length: 100 }, (_, i) => `user-${i}`);
    const answers = await Promise.all(
      users.map(async (u) => {
        const res = await fetch(url, { headers: { "x-test-user": u } });
        const body = (await res.json()) as { userId: string; requestId: string };
        return { u, body, header: res.headers.get("x-request-id") };
      }),
    );
    for (const { u, body, header } of answers) {
      expect(body.userId).toBe(u);
      expect(body.requestId).toBe(header);
    }
    expect(new Set(answers.map((a) => a.body.requestId)).size).toBe(users.length);
  });

  it("defines the lazy getter once per request prototype, reading each request's own scope", async () => {
    class FakeRequest {
      constructor(
        readonly headers: Record<string, string>,
        readonly user: { id: string } | undefined,
      ) {}
    }
    const bridge = new HttpBridge<FakeRequest & Req>();
    let resolveCtx!: (ids: (string | null)[]) => void;
    const ids = new Promise<(string | null)[]>((r) => (resolveCtx = r));
    const url = await serve({}, (req, res) => {
      const a = new FakeRequest({}, { id: "a" }) as FakeRequest & Req;
      const b = new FakeRequest({}, { id: "b" }) as FakeRequest & Req;
      defineContextGetter(a, bridge.begin(req, res));
      defineContextGetter(b, bridge.begin(req, res));
      const read = (r: object) => (r as { nervaCtx: ExecContext }).nervaCtx.userId;
      const stranger = new FakeRequest({}, { id: "c" });
      let strangerError: unknown;
      try {
        read(stranger);
      } catch (err) {
        strangerError = err;
      }
      expect(Object.getOwnPropertyDescriptor(a, "nervaCtx")).toBeUndefined();
      expect((strangerError as NervaError).code).toBe(ErrorCode.INTERNAL);
      resolveCtx([read(a), read(b)]);
      res.end();
    });
    await (await fetch(url)).text();
    expect(await ids).toEqual(["a", "b"]);
  });
});
