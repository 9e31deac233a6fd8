import { createHmac } from "node:crypto";
import type { ExecContext } from "../context/exec-context.js";
import { NervaError, type ErrorCode } from "../errors.js";
import type { NervaHttpOptions } from "../http/options.js";
import { httpStatusOfResult } from "../http/status.js";
import { Orchestrator } from "../orchestrator/orchestrator.js";
import { DeclarativePolicyEngine } from "../declarative-policy/declarative-engine.js";
import { RuleRouter } from "../router/rule-router.js";
import { InProcessRuntime } from "../runtime/in-process-runtime.js";
import type { AgentRuntime } from "../runtime/types.js";

/**
 * What the routes of a bridge contract server share, whatever the framework: the orchestrator and
 * runtime they run, and the bodies they answer with. Each framework still reads the context, sets
 * the status and streams the Server-Sent Events its own way, through its bridge.
 *
 * @example
 * app.post("/chat", async (req, res) => {
 *   const { status, body } = await routes.chat(req.body?.message, req.nervaCtx);
 *   res.status(status).json(body);
 * });
 */
export interface BridgeContractRoutes {
  /**
   * Routes `ticker`, `words`, `flood` and `secret` (denied by policy) by keyword, everything else
   * to `echo`; 5 requests per user per minute.
   */
  readonly orchestrator: Orchestrator;
  readonly runtime: AgentRuntime;
  /** Body of `GET /whoami`, from the request's context read twice (`ctx`, then `again`). */
  whoami(ctx: ExecContext, again: ExecContext): Record<string, unknown>;
  /** Runs `orchestrator.handle`; answer `POST /chat` with this status and JSON body. */
  chat(
    message: unknown,
    ctx: ExecContext,
  ): Promise<{ status: number; body: Record<string, unknown> }>;
  /**
   * The chunks `POST /chat/stream` sends as Server-Sent Events (with `ctx`): the orchestrator's
   * stream, or for the message `explode` a stream that fails after its first chunk.
   */
  stream(message: unknown, ctx: ExecContext): AsyncIterable<unknown>;
  /** What `GET /fail/:code` throws: a NervaError with that code and `retryAfterSeconds: 7`. */
  failure(code: string): NervaError;
  /**
   * An unexpected error (a `TypeError` whose message holds {@link BRIDGE_CONTRACT_SECRET} and a
   * file path), thrown by `GET /crash` (`where: "route"`) and by the app's middleware for requests
   * carrying `x-contract-crash: middleware`. No client may ever see its message.
   */
  crash(where: "route" | "middleware"): Error;
  /** How many chunks the `flood` agent produced so far for the request `requestId`. */
  produced(requestId: string): number;
  /** Stops the runtime. */
  close(): Promise<void>;
}

/**
 * What a bridge contract asks the framework to start, on 127.0.0.1 and port 0.
 *
 * The server serves, through the framework's bridge with `options`:
 * - `GET /whoami`: JSON `routes.whoami(ctx, again)`;
 * - `POST /chat` (JSON `{ message }`): `routes.chat(message, ctx)`'s status and JSON body;
 * - `POST /chat/stream` (JSON `{ message }`): `routes.stream(message, ctx)` as Server-Sent Events;
 * - `GET /fail/:code`: throws `routes.failure(code)` for the bridge's error handling to answer;
 * - `GET /crash`: throws `routes.crash("route")`.
 *
 * The two `POST` routes read their body with `jsonBodyOf(req)` (from `@nerva/core/http`) and hand
 * its `message` on unchanged; the app parses JSON bodies with its framework's parser and default
 * size limit (at most 1 MB). A middleware of the app, running after the bridge started the request
 * (Express middleware, Fastify hook, Nest guard...), throws `routes.crash("middleware")` when the
 * request carries the header `x-contract-crash: middleware`. Every error reaches the bridge's own
 * error handling (Express: `nervaErrorHandler()`; Fastify: the plugin; NestJS: `NervaModule`).
 *
 * When `auth` is not `null`, the app's own authentication sits at that place (one of the
 * `authPlacements` given to {@link describeBridgeContract}) in front of the first three routes. Like
 * most apps' auth it checks only requests that carry `Authorization: Bearer <jwt>`: it verifies the
 * HS256 JWT with `jwtSecret` (answering 401 when it is bad) and sets the request's user so that the
 * bridge's default `resolve` reads the claims `sub` (user id), `roles` and `sid` (session id).
 * When `auth` is `null` the app has no authentication at all.
 *
 * @example
 * const setup: BridgeContractSetup = { auth: null, options: { requireAuth: true }, jwtSecret, routes };
 */
export interface BridgeContractSetup {
  readonly auth: string | null;
  readonly options: NervaHttpOptions<unknown>;
  readonly jwtSecret: string;
  readonly routes: BridgeContractRoutes;
}

/**
 * A server started for a bridge contract.
 *
 * @example
 * const server: BridgeContractServer = { url: "http://127.0.0.1:40123", close: () => app.close() };
 */
export interface BridgeContractServer {
  readonly url: string;
  close(): Promise<void>;
}

/**
 * Starts the framework's server for one scenario of {@link describeBridgeContract}.
 *
 * @example
 * const start: BridgeContractStart = async ({ options, routes }) => listen(buildApp(options, routes));
 */
export type BridgeContractStart = (setup: BridgeContractSetup) => Promise<BridgeContractServer>;

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Text in the message of every unexpected error the contract has its server throw: an answer
 * holding it leaked an internal message.
 *
 * @example
 * expect(await res.text()).not.toContain(BRIDGE_CONTRACT_SECRET);
 */
export const BRIDGE_CONTRACT_SECRET = "contract-internal-s3cret";

/** Chunks the `flood` agent produces at most, of {@link FLOOD_CHUNK_BYTES} each (256 MB in all). */
export const FLOOD_CHUNKS = 4000;
export const FLOOD_CHUNK_BYTES = 64 * 1024;

export function createContractRoutes(onAborted: (requestId: string) => void): BridgeContractRoutes {
  const runtime = new InProcessRuntime({ timeoutSeconds: 5, circuitBreaker: false });
  const orchestrator = new Orchestrator({
    router: new RuleRouter({
      rules: [
        { handler: "ticker", keywords: ["ticker"] },
        { handler: "words", keywords: ["words"] },
        { handler: "flood", keywords: ["flood"] },
        { handler: "secret_agent", keywords: ["secret"] },
        { handler: "crasher", keywords: ["crash"] },
        { handler: "stream_crasher", keywords: ["breakdown"] },
      ],
      defaultHandler: "echo",
    }),
    runtime,
    policy: new DeclarativePolicyEngine({
      version: 1,
      rules: [
        {
          name: "no-secrets",
          effect: "deny",
          kind: "agent",
          names: ["secret_agent"],
          reason: "Secrets are off limits.",
        },
      ],
      rateLimits: [{ name: "per-user", per: "user", limit: 5, windowSeconds: 60 }],
    }),
  });
  runtime.register("echo", async (input, ctx) => {
    // A little jitter, so that concurrent requests finish out of order.
    await sleep(Math.random() * 5);
    return `${ctx.userId ?? "anonymous"}: ${input.message}`;
  });
  runtime.register("ticker", async function* (_input, ctx) {
    try {
      yield "tick";
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
      yield "never";
    } finally {
      if (ctx.signal.aborted) onAborted(ctx.requestId);
    }
  });
  const produced = new Map<string, number>();
  runtime.register("flood", async function* (_input, ctx) {
    try {
      for (let i = 0; i < FLOOD_CHUNKS && !ctx.signal.aborted; i++) {
        produced.set(ctx.requestId, i + 1);
        // A fresh string per chunk, as a model's output is: nothing is shared between chunks.
        yield `${i}:`.padEnd(FLOOD_CHUNK_BYTES, "x");
      }
    } finally {
      if (ctx.signal.aborted) onAborted(ctx.requestId);
    }
  });
  runtime.register("words", async function* (input) {
    for (const word of input.message.split(" ")) yield `${word} `;
  });
  runtime.register("secret_agent", async () => "the secret");
  // Handlers that fail the way real ones do: an exception whose message carries internals.
  const internals = `${BRIDGE_CONTRACT_SECRET}: connect ECONNREFUSED /var/run/postgresql/.s.PGSQL.5432`;
  runtime.register("crasher", async () => {
    throw new Error(internals);
  });
  runtime.register("stream_crasher", async function* () {
    yield "partial ";
    throw new TypeError(internals);
  });

  return {
    orchestrator,
    runtime,
    whoami: (ctx, again) => ({
      userId: ctx.userId,
      sessionId: ctx.sessionId,
      roles: ctx.permissions.roles,
      requestId: ctx.requestId,
      traceId: ctx.traceId,
      same: ctx === again,
    }),
    chat: async (message, ctx) => {
      const response = await orchestrator.handle(message as string, ctx);
      return {
        status: httpStatusOfResult(response),
        body: { response, userId: ctx.userId, requestId: ctx.requestId },
      };
    },
    stream: (message, ctx) =>
      message === "explode"
        ? exploding(crash("stream"))
        : orchestrator.stream(message as string, ctx),
    crash,
    produced: (requestId) => produced.get(requestId) ?? 0,
    failure: (code) =>
      new NervaError(code as ErrorCode, `failed with ${code}`, {
        details: { retryAfterSeconds: 7 },
      }),
    close: () => runtime.close(),
  };
}

function crash(where: string): Error {
  return new TypeError(
    `${BRIDGE_CONTRACT_SECRET}: ${where} failed at /srv/contract/internal.js:12:34 (postgres://admin:pw@db)`,
  );
}

/** One chunk, then `error`: a stream that fails midway. */
async function* exploding(error: Error): AsyncGenerator<string> {
  yield "partial";
  throw error;
}

/**
 * The routes' shared parts for a framework's own tests next to {@link describeBridgeContract}
 * (same orchestrator and agents as the contract's). Close them when done.
 *
 * @example
 * const routes = createBridgeContractRoutes();
 * const server = await start({ auth: null, options: {}, jwtSecret: BRIDGE_CONTRACT_JWT_SECRET, routes });
 */
export function createBridgeContractRoutes(): BridgeContractRoutes {
  return createContractRoutes(() => undefined);
}

/**
 * HS256 secret of the bearer tokens the contract sends (also handed to `start` as `jwtSecret`).
 *
 * @example
 * await app.register(fastifyJwt, { secret: BRIDGE_CONTRACT_JWT_SECRET });
 */
export const BRIDGE_CONTRACT_JWT_SECRET = "nerva-bridge-contract-secret-0123456789abcdef";

/**
 * A bearer JWT (HS256, five minutes) for `sub` with extra claims, signed with
 * {@link BRIDGE_CONTRACT_JWT_SECRET}; made with node:crypto only.
 *
 * @example
 * await fetch(`${url}/whoami`, { headers: { authorization: `Bearer ${mintBridgeContractToken("alice")}` } });
 */
export function mintBridgeContractToken(sub: string, claims: Record<string, unknown> = {}): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const now = Math.floor(Date.now() / 1000);
  const signed = `${part({ alg: "HS256", typ: "JWT" })}.${part({ ...claims, sub, iat: now, exp: now + 300 })}`;
  const signature = createHmac("sha256", BRIDGE_CONTRACT_JWT_SECRET)
    .update(signed)
    .digest("base64url");
  return `${signed}.${signature}`;
}
