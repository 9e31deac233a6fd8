import { ErrorCode, NervaError, type Orchestrator } from "@nerva/core";
import { type TraceSink } from "@nerva/core/tracing";
import { httpStatusOfResult, jsonBodyOf } from "@nerva/core/http";
import { nervaPlugin, sendSSE } from "@nerva/fastify";
import Fastify, { type FastifyInstance } from "fastify";
import {
  chatRequestOf,
  identityOf,
  tokenRequestOf,
  type DevAuth,
  type TokenClaims,
} from "@nerva/example-kit";

declare module "fastify" {
  interface FastifyRequest {
    /** Set by the auth hook from a valid bearer token. */
    user?: TokenClaims;
  }
}

/**
 * The Fastify example: `POST /token` (dev only) mints a JWT, `POST /chat` answers with JSON and
 * `POST /chat/stream` with Server-Sent Events, both through the orchestrator with the caller's
 * identity in `request.nervaCtx`. Bodies are checked with `jsonBodyOf` and zod rather than a JSON
 * schema, whose default type coercion would turn `42` into `"42"`; every error is answered by the
 * plugin with the Nerva JSON error body.
 */
export async function createApp(options: {
  orchestrator: Orchestrator;
  auth: DevAuth;
  /** Told of every request's spans and events (e.g. the trace viewer's store). */
  traceSink?: TraceSink | undefined;
}): Promise<FastifyInstance> {
  const { orchestrator, auth, traceSink } = options;
  const app = Fastify({ bodyLimit: 64 * 1024 });

  await app.register(nervaPlugin, {
    requireAuth: true,
    timeoutSeconds: 30,
    // Identity comes from the verified token only; the client may pick one of its own sessions.
    resolve: (request) => identityOf(request.user, request.headers["x-session-id"]),
    traceSink,
  });

  // The app's own authentication: a valid bearer JWT sets request.user; a bad one is a 401.
  app.decorateRequest("user", undefined);
  app.addHook("onRequest", async (request) => {
    const header = request.headers.authorization;
    if (header === undefined) return;
    const token = /^Bearer (\S+)$/.exec(header)?.[1];
    try {
      if (token === undefined) throw new Error("not a bearer token");
      request.user = await auth.verify(token);
    } catch {
      throw new NervaError(ErrorCode.UNAUTHENTICATED, "Invalid or expired token.", {
        details: { wwwAuthenticate: 'Bearer error="invalid_token"' },
      });
    }
  });

  app.get("/", async () => ({
    name: "nerva-fastify-example",
    endpoints: ["POST /token", "POST /chat", "POST /chat/stream"],
  }));

  // Development convenience: anyone can get a token. A real app gets tokens from its identity provider.
  app.post("/token", async (request) => {
    const { user, roles = [] } = tokenRequestOf(jsonBodyOf(request));
    return { ...(await auth.mint(user, roles)), tokenType: "Bearer" };
  });

  app.post("/chat", async (request, reply) => {
    const ctx = request.nervaCtx;
    const { message } = chatRequestOf(jsonBodyOf(request));
    const response = await orchestrator.handle(message, ctx);
    return reply.code(httpStatusOfResult(response)).send({ ...response, requestId: ctx.requestId });
  });

  app.post("/chat/stream", (request, reply) => {
    const ctx = request.nervaCtx;
    const { message } = chatRequestOf(jsonBodyOf(request));
    return sendSSE(reply, orchestrator.stream(message, ctx), ctx);
  });

  return app;
}
