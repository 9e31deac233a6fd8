import { ErrorCode, NervaError } from "@nerva/core";
import { type TraceSink } from "@nerva/core/tracing";
import { jsonBodyOf } from "@nerva/core/http";
import { nervaAgUi, nervaChat, nervaPlugin, sendSSE } from "@nerva/fastify";
import Fastify, { type FastifyInstance, type FastifyReply } from "fastify";
import {
  EXAMPLE_ENDPOINTS,
  chatRequestOf,
  identityOf,
  tokenRequestOf,
  type ExampleAppDeps,
  type RouteAnswer,
  type TokenClaims,
} from "@nerva/example-kit";

declare module "fastify" {
  interface FastifyRequest {
    /** Set by the auth hook from a valid bearer token. */
    user?: TokenClaims;
  }
}

const send = (reply: FastifyReply, { status, body }: RouteAnswer) => reply.code(status).send(body);

/**
 * The Fastify example: `POST /token` (dev only) mints a JWT, `POST /chat` answers with JSON and
 * `POST /chat/stream` with Server-Sent Events, both through the orchestrator with the caller's
 * identity in `request.nervaCtx`; approvals (`POST /approvals/:id`, `POST /chat/resume`) and
 * durable runs (`/runs`) through the example service's route bodies; the protocols of frontends
 * and other agents (`/api/chat` for `useChat`, `/ag-ui`, `/mcp`) behind the same JWT auth.
 * Bodies are checked with `jsonBodyOf` and zod rather than a JSON schema, whose default type
 * coercion would turn `42` into `"42"`; every error is answered by the plugin with the Nerva
 * JSON error body.
 */
export async function createApp(
  options: ExampleAppDeps & {
    /** Told of every request's spans and events (e.g. the trace viewer's store). */
    traceSink?: TraceSink | undefined;
  },
): Promise<FastifyInstance> {
  const { orchestrator, routes, protocols, auth, traceSink } = options;
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
    endpoints: EXAMPLE_ENDPOINTS,
  }));

  // Development convenience: anyone can get a token. A real app gets tokens from its identity provider.
  app.post("/token", async (request) => {
    const { user, roles } = tokenRequestOf(jsonBodyOf(request));
    return { ...(await auth.mint(user, roles)), tokenType: "Bearer" };
  });

  app.post("/chat", async (request, reply) =>
    send(reply, await routes.chat(jsonBodyOf(request), request.nervaCtx)),
  );

  app.post("/chat/stream", (request, reply) => {
    const ctx = request.nervaCtx;
    const { message } = chatRequestOf(jsonBodyOf(request));
    return sendSSE(reply, orchestrator.stream(message, ctx), ctx);
  });

  type WithId = { Params: { id: string } };
  app.post("/chat/resume", async (request, reply) =>
    send(reply, await routes.resume(jsonBodyOf(request), request.nervaCtx)),
  );
  app.post<WithId>("/approvals/:id", async (request, reply) =>
    send(reply, await routes.decide(request.params.id, jsonBodyOf(request), request.nervaCtx)),
  );
  app.post("/runs", async (request, reply) =>
    send(reply, await routes.startRun(jsonBodyOf(request), request.nervaCtx)),
  );
  app.get<WithId>("/runs/:id", async (request, reply) =>
    send(reply, await routes.getRun(request.params.id, request.nervaCtx)),
  );
  app.get<WithId>("/runs/:id/events", async (request, reply) => {
    const { source, options } = await routes.runEvents(
      request.params.id,
      request,
      request.nervaCtx,
    );
    return sendSSE(reply, source, null, options);
  });
  app.post<WithId>("/runs/:id/cancel", async (request, reply) =>
    send(reply, await routes.cancelRun(request.params.id, request.nervaCtx)),
  );

  // useChat (`POST /api/chat`, `GET /api/chat/:id/stream`, `POST /api/chat/:id/stop`), AG-UI's
  // HttpAgent (`POST /ag-ui`) and MCP clients (`/mcp`), as the token's user.
  await app.register(nervaChat(protocols.chat));
  await app.register(nervaAgUi(protocols.agUi));
  app.all("/mcp", async (request, reply) => {
    const ctx = request.nervaCtx; // a 401 here, before the reply is handed to the MCP transport
    reply.hijack();
    await protocols.mcp.handle(request.raw, reply.raw, ctx, request.body);
  });

  return app;
}
