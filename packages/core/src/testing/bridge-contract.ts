import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NervaHttpOptions } from "../http/options.js";
import { readSSEEvents, type SSEEvent } from "./sse-reader.js";
import type { OrchestratorResponse } from "../middleware/types.js";
import { INTERNAL_SIGNS, describeBadClients } from "./bridge-contract-bad-clients.js";
import {
  BRIDGE_CONTRACT_JWT_SECRET,
  BRIDGE_CONTRACT_SECRET,
  createContractRoutes,
  mintBridgeContractToken,
  sleep,
  type BridgeContractServer,
  type BridgeContractStart,
} from "./bridge-contract-routes.js";

export {
  BRIDGE_CONTRACT_JWT_SECRET,
  BRIDGE_CONTRACT_SECRET,
  createBridgeContractRoutes,
  mintBridgeContractToken,
  type BridgeContractRoutes,
  type BridgeContractServer,
  type BridgeContractSetup,
  type BridgeContractStart,
} from "./bridge-contract-routes.js";

/**
 * Options of {@link describeBridgeContract}.
 *
 * @example
 * const options: BridgeContractOptions = { authPlacements: ["before-middleware", "after-middleware"] };
 */
export interface BridgeContractOptions {
  /**
   * The places the app's authentication can sit in this framework (before or after the bridge's
   * middleware, in a hook, a guard...). The identity scenarios run once per place; the others on a
   * server with the first. Default: `["app"]`.
   */
  readonly authPlacements?: readonly string[];
  /**
   * Paths that serve `POST /chat/stream`'s stream, each through another streaming helper of the
   * framework (e.g. NestJS's `@Sse()` next to `@Res()`). The streaming scenarios run on each.
   * Default: `["/chat/stream"]`.
   */
  readonly streamPaths?: readonly string[];
}

const bearer = (sub: string, claims?: Record<string, unknown>) => ({
  authorization: `Bearer ${mintBridgeContractToken(sub, claims)}`,
});
const json = async (res: Response) => (await res.json()) as Record<string, unknown>;
const errorOf = async (res: Response) =>
  (await json(res)).error as { code: string; requestId: string };
const UUID = /^[0-9a-f-]{36}$/;

async function sseEvents(res: Response): Promise<SSEEvent[]> {
  const events: SSEEvent[] = [];
  for await (const e of readSSEEvents(res.body as AsyncIterable<Uint8Array>)) events.push(e);
  return events;
}

/**
 * The behaviour every HTTP bridge (`@nerva/express`, `@nerva/fastify`, `@nerva/nestjs`) must share,
 * checked over real HTTP against servers `start` launches on port 0: the context resolved from the
 * user the app's auth set (wherever that auth sits), 200 concurrent users kept apart, `requireAuth`,
 * identity headers and client request ids ignored unless trusted, the caller's `traceparent`,
 * NervaErrors and refused runs mapped to their HTTP status, Server-Sent Events ending with `done`
 * or `error`, a client disconnect cancelling the handler; and for clients that behave badly: every
 * error (malformed, oversized or non-JSON bodies, a `TypeError` in a middleware or a route) answered
 * with the Nerva JSON error body, its status and no stack, path or internal message; a client that
 * stops reading a stream pausing the producer with the heap bounded; a stream failing midway
 * reported to `onError` once. See {@link BridgeContractSetup} for the routes the server must serve.
 *
 * @example
 * describeBridgeContract("@nerva/express", async ({ auth, options, jwtSecret, routes }) => {
 *   const app = buildApp(auth, options, jwtSecret, routes);
 *   return listen(app);
 * }, { authPlacements: ["before-middleware", "after-middleware"] });
 */
export function describeBridgeContract(
  label: string,
  start: BridgeContractStart,
  options: BridgeContractOptions = {},
): void {
  const placements = options.authPlacements ?? ["app"];
  const streamPaths = options.streamPaths ?? ["/chat/stream"];
  const [firstPlacement] = placements;
  if (firstPlacement === undefined) throw new Error("authPlacements must name at least one place");

  describe(`bridge contract: ${label}`, () => {
    const aborted: string[] = [];
    const reported: { error: unknown; requestId: string | null }[] = [];
    const routes = createContractRoutes((requestId) => aborted.push(requestId));
    const open = new Set<BridgeContractServer>();

    const serve = async (auth: string | null, bridge: NervaHttpOptions<unknown> = {}) => {
      const server = await start({
        auth,
        jwtSecret: BRIDGE_CONTRACT_JWT_SECRET,
        routes,
        options: { onError: (error, requestId) => reported.push({ error, requestId }), ...bridge },
      });
      open.add(server);
      return server;
    };
    /** Runs `fn` against a server of its own, closed afterwards. */
    const withServer = async (
      auth: string | null,
      bridge: NervaHttpOptions<unknown>,
      fn: (url: string) => Promise<void>,
    ) => {
      const server = await serve(auth, bridge);
      try {
        await fn(server.url);
      } finally {
        open.delete(server);
        await server.close();
      }
    };

    afterAll(async () => {
      for (const server of open) await server.close();
      await routes.close();
    });

    describeBadClients({
      serve: () => serve(firstPlacement),
      routes,
      reported,
      aborted,
      streamPaths,
    });

    describe.each(placements)("with the app's auth at %s", (placement) => {
      let url: string;
      beforeAll(async () => {
        ({ url } = await serve(placement));
      });

      it("resolves the context from the user the app's auth set", async () => {
        expect(url).toMatch(/^http:\/\/[^/]+:\d+$/);
        const res = await fetch(`${url}/whoami`, {
          headers: bearer("alice", { roles: ["admin"], sid: "s-1" }),
        });
        expect(res.status).toBe(200);
        const body = await json(res);
        expect(body).toMatchObject({
          userId: "alice",
          sessionId: "s-1",
          roles: ["admin"],
          same: true,
        });
        expect(res.headers.get("x-request-id")).toBe(body.requestId);
      });

      it("keeps 200 concurrent users apart", async () => {
        const users = Array.from({ length: 200 }, (_, i) => `user-${placement}-${i}`);
        const answers = await Promise.all(
          users.map(async (sub) => {
            const res = await fetch(`${url}/chat`, {
              method: "POST",
              headers: { ...bearer(sub), "content-type": "application/json" },
              body: JSON.stringify({ message: `hi from ${sub}` }),
            });
            return {
              sub,
              status: res.status,
              header: res.headers.get("x-request-id"),
              body: await json(res),
            };
          }),
        );
        for (const { sub, status, header, body } of answers) {
          expect(status).toBe(200);
          expect(body.userId).toBe(sub);
          expect(body.requestId).toBe(header);
          expect((body.response as OrchestratorResponse).text).toBe(`${sub}: hi from ${sub}`);
        }
        expect(new Set(answers.map((a) => a.header)).size).toBe(users.length);
      });

      it("answers 401 with requireAuth when the app's auth set no user", async () => {
        await withServer(placement, { requireAuth: true }, async (strict) => {
          const res = await fetch(`${strict}/whoami`);
          expect(res.status).toBe(401);
          expect(res.headers.get("www-authenticate")).toBe("Bearer");
          expect((await errorOf(res)).code).toBe("UNAUTHENTICATED");
          const ok = await fetch(`${strict}/whoami`, { headers: bearer("bob") });
          expect(ok.status).toBe(200);
          expect((await json(ok)).userId).toBe("bob");
        });
      });
    });

    describe("security defaults", () => {
      it("ignores identity headers, bearer tokens and client request ids unless trusted", async () => {
        const token = mintBridgeContractToken("alice");
        await withServer(null, {}, async (url) => {
          const res = await fetch(`${url}/whoami`, {
            headers: {
              authorization: `Bearer ${token}`,
              "x-user-id": "mallory",
              "x-request-id": "mine",
            },
          });
          const text = await res.text();
          const body = JSON.parse(text) as Record<string, unknown>;
          expect(body.userId).toBeNull();
          expect(body.requestId).not.toBe("mine");
          expect(text).not.toContain(token);
        });
        await withServer(
          null,
          { trustIdentityHeaders: true, trustRequestId: true },
          async (url) => {
            const trusted = await json(
              await fetch(`${url}/whoami`, {
                headers: { "x-user-id": "gateway-user", "x-request-id": "mine" },
              }),
            );
            expect(trusted).toMatchObject({ userId: "gateway-user", requestId: "mine" });
          },
        );
      });

      it("answers 500 when resolve throws, never an anonymous context", async () => {
        const resolve = () => {
          throw new Error("user service down");
        };
        await withServer(firstPlacement, { resolve }, async (url) => {
          const res = await fetch(`${url}/whoami`);
          expect(res.status).toBe(500);
          const text = await res.text();
          expect(text).not.toContain("user service down");
          const requestId = res.headers.get("x-request-id");
          expect(requestId).toMatch(UUID);
          expect((JSON.parse(text) as { error: { requestId: string } }).error.requestId).toBe(
            requestId,
          );
          const report = reported.find((r) => r.requestId === requestId);
          expect((report?.error as Error | undefined)?.message).toContain("user service down");
        });
      });

      it("joins the caller's trace", async () => {
        const traceId = "0af7651916cd43dd8448eb211c80319c";
        await withServer(null, {}, async (url) => {
          const body = await json(
            await fetch(`${url}/whoami`, {
              headers: { traceparent: `00-${traceId}-b7ad6b7169203331-01` },
            }),
          );
          expect(body.traceId).toBe(traceId);
        });
      });
    });

    describe("errors → status", () => {
      let url: string;
      beforeAll(async () => {
        ({ url } = await serve(firstPlacement));
      });

      it.each([
        ["INVALID_INPUT", 400],
        ["PERMISSION_DENIED", 403],
        ["POLICY_DENIED", 403],
        ["APPROVAL_PENDING", 202],
        ["RATE_LIMITED", 429],
        ["TIMEOUT", 504],
        ["CIRCUIT_OPEN", 503],
        ["UNAUTHENTICATED", 401],
        ["NOT_FOUND", 404],
        ["INTERNAL", 500],
      ])("%s → %i", async (code, status) => {
        const res = await fetch(`${url}/fail/${code}`);
        expect(res.status).toBe(status);
        expect((await errorOf(res)).requestId).toBe(res.headers.get("x-request-id"));
        if (status === 429 || status === 503) expect(res.headers.get("retry-after")).toBe("7");
      });

      it("answers 400 with the validation issues of bad input", async () => {
        const res = await fetch(`${url}/chat`, {
          method: "POST",
          headers: { ...bearer("carol"), "content-type": "application/json" },
          body: JSON.stringify({ message: 42 }),
        });
        expect(res.status).toBe(400);
        expect((await json(res)).error).toMatchObject({
          code: "INVALID_INPUT",
          issues: [{ path: "message" }],
        });
      });

      it("answers the orchestrator's refusals: policy 403, rate limit 429 with Retry-After", async () => {
        const auth = { ...bearer("frank"), "content-type": "application/json" };
        const post = (message: string) =>
          fetch(`${url}/chat`, {
            method: "POST",
            headers: auth,
            body: JSON.stringify({ message }),
          });
        const denied = await post("tell me the secret");
        expect(denied.status).toBe(403);
        expect((await errorOf(denied)).code).toBe("POLICY_DENIED");
        // Five per minute per user, counted before routing: the refused request was one of them.
        for (let i = 0; i < 4; i++) expect((await post(`hello ${i}`)).status).toBe(200);
        const limited = await post("one too many");
        expect(limited.status).toBe(429);
        expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
      });

      it("never shows a failed handler's own error text (an exception's message) to the client", async () => {
        const headers = { ...bearer("grace"), "content-type": "application/json" };
        const res = await fetch(`${url}/chat`, {
          method: "POST",
          headers,
          body: JSON.stringify({ message: "crash please" }),
        });
        expect(res.status).toBe(502);
        const answer = await res.text();
        expect(answer).not.toContain(BRIDGE_CONTRACT_SECRET);
        for (const sign of INTERNAL_SIGNS) expect(answer).not.toMatch(sign);
        const response = (JSON.parse(answer) as { response: OrchestratorResponse }).response;
        expect(response).toMatchObject({ status: "error", error: "the agent failed" });
        for (const path of streamPaths) {
          const streamed = await fetch(`${url}${path}`, {
            method: "POST",
            headers,
            body: JSON.stringify({ message: "breakdown please" }),
          });
          const text = (await sseEvents(streamed)).map((e) => e.data).join("\n");
          expect(text).toContain("partial");
          expect(text).not.toContain(BRIDGE_CONTRACT_SECRET);
          for (const sign of INTERNAL_SIGNS) expect(text).not.toMatch(sign);
        }
      });

      it("logs a failed agent's cause on the server, one line with the request id; logger: false logs nothing", async () => {
        const lines: { message: string; fields: Record<string, unknown> }[] = [];
        const logger = {
          error: (message: string, fields: Readonly<Record<string, unknown>>) =>
            lines.push({ message, fields: { ...fields } }),
        };
        // Users of their own: the contract's policy allows 5 requests a minute per user.
        const headers = { ...bearer("logger"), "content-type": "application/json" };
        const crash = (base: string) =>
          fetch(`${base}/chat`, {
            method: "POST",
            headers,
            body: JSON.stringify({ message: "crash please" }),
          });
        await withServer(firstPlacement, { logger }, async (base) => {
          const res = await crash(base);
          expect(res.status).toBe(502);
          const requestId = ((await res.json()) as { requestId?: string }).requestId;
          // The line is written when the response ends, after the client has its answer.
          for (let i = 0; i < 100 && lines.length === 0; i++) await sleep(10);
          expect(lines).toHaveLength(1);
          const [line] = lines as [(typeof lines)[number]];
          expect(line.fields).toMatchObject({ handler: "crasher", status: "error" });
          expect(line.message).toContain('agent "crasher"');
          expect(line.message).toContain(BRIDGE_CONTRACT_SECRET); // the cause, for the operator
          if (requestId !== undefined) expect(line.fields.requestId).toBe(requestId);
          expect(line.message).toContain(String(line.fields.requestId));
          // A request whose agent succeeded logs nothing.
          const ok = await fetch(`${base}/chat`, {
            method: "POST",
            headers,
            body: JSON.stringify({ message: "hello" }),
          });
          expect(ok.status).toBe(200);
          await ok.text();
          await sleep(50);
          expect(lines).toHaveLength(1);
        });
        await withServer(firstPlacement, { logger: false }, async (base) => {
          const res = await crash(base);
          expect(res.status).toBe(502);
          await res.text();
          await sleep(50);
          expect(lines).toHaveLength(1);
        });
        // A logger that throws is called from the response's close event: the throw must not
        // escape there (it would end the process); the server goes on answering.
        let calls = 0;
        const broken = {
          error: () => {
            calls++;
            throw new Error("the log shipper is down");
          },
        };
        await withServer(firstPlacement, { logger: broken }, async (base) => {
          const res = await crash(base);
          expect(res.status).toBe(502);
          await res.text();
          for (let i = 0; i < 100 && calls === 0; i++) await sleep(10);
          expect(calls).toBe(1);
          const again = await crash(base);
          expect(again.status).toBe(502);
          await again.text();
        });
      });

      it("answers 422 when no agent may take an anonymous request", async () => {
        const res = await fetch(`${url}/chat`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ message: "hello" }),
        });
        expect(res.status).toBe(422);
        expect(((await json(res)).response as OrchestratorResponse).status).toBe("wrong_handler");
      });
    });

    describe.each(streamPaths)("streaming at %s", (streamPath) => {
      let url: string;
      beforeAll(async () => {
        ({ url } = await serve(firstPlacement));
      });
      const post = (headers: Record<string, string>, message: string) =>
        fetch(`${url}${streamPath}`, {
          method: "POST",
          headers: { ...headers, "content-type": "application/json" },
          body: JSON.stringify({ message }),
        });

      it("streams chunks as SSE with running ids, keeping the request id header, and ends with done", async () => {
        const res = await post(bearer("dave"), "words one two three");
        expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
        const requestId = res.headers.get("x-request-id");
        expect(requestId).toMatch(UUID);
        const events = await sseEvents(res);
        expect(events.filter((e) => e.event === "message").map((e) => e.data)).toEqual([
          "words ",
          "one ",
          "two ",
          "three ",
        ]);
        expect(events.at(-1)?.event, JSON.stringify(events.at(-1))).toBe("done");
        expect(events.map((e) => e.id)).toEqual(events.map((_, i) => String(i + 1)));
        const done = JSON.parse(events.at(-1)?.data ?? "null") as {
          requestId: string;
          result: OrchestratorResponse;
        };
        expect(done.requestId).toBe(requestId);
        expect(done.result).toMatchObject({ status: "success", text: "words one two three " });
      });

      it("ends a stream the policy refuses with an error event carrying the 403", async () => {
        const events = await sseEvents(await post(bearer("gina"), "tell me the secret"));
        expect(events.at(-1)?.event).toBe("error");
        expect(JSON.parse(events.at(-1)?.data ?? "")).toMatchObject({
          status: 403,
          error: { code: "POLICY_DENIED" },
        });
      });

      it("cancels the handler when the client disconnects mid-stream", async () => {
        const requestId = await new Promise<string>((resolve, reject) => {
          const req = http.request(`${url}${streamPath}`, {
            method: "POST",
            headers: { ...bearer("erin"), "content-type": "application/json" },
          });
          req.on("error", () => undefined);
          req.on("response", (res) => {
            let text = "";
            res.on("data", (chunk: Buffer) => {
              text += chunk.toString();
              if (!text.includes("tick")) return;
              resolve(String(res.headers["x-request-id"]));
              req.destroy();
            });
            res.on("end", () => reject(new Error(`stream ended early: ${text}`)));
          });
          req.end(JSON.stringify({ message: "ticker" }));
        });
        expect(requestId).toMatch(UUID);
        for (let i = 0; i < 100 && !aborted.includes(requestId); i++) await sleep(10);
        expect(aborted).toContain(requestId);
      });
    });
  });
}
