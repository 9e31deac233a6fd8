import type { Orchestrator } from "@nerva/core";
import { httpStatusOfResult, nervaPlugin, sendSse } from "@nerva/fastify";
import Fastify, { type FastifyInstance } from "fastify";
import { USER_NAME, identityOf, type DevAuth, type TokenClaims } from "@nerva/example-kit";

declare module "fastify" {
  interface FastifyRequest {
    /** Set by the auth hook from a valid bearer token. */
    user?: TokenClaims;
  }
}

interface ChatBody {
  message: string;
}
const chatSchema = {
  body: {
    type: "object",
    required: ["message"],
    properties: { message: { type: "string", maxLength: 10_000 } },
  },
} as const;

/**
 * The Fastify example: `POST /token` (dev only) mints a JWT, `POST /chat` answers with JSON and
 * `POST /chat/stream` with Server-Sent Events, both through the orchestrator with the caller's
 * identity in `request.nervaCtx`.
 */
export async function createApp(options: {
  orchestrator: Orchestrator;
  auth: DevAuth;
}): Promise<FastifyInstance> {
  const { orchestrator, auth } = options;
  const app = Fastify({ bodyLimit: 64 * 1024 });

  // The app's own authentication: a valid bearer JWT sets request.user; a bad one is a 401.
  app.decorateRequest("user", undefined);
  app.addHook("onRequest", async (request, reply) => {
    const header = request.headers.authorization;
    if (header === undefined) return;
    const token = /^Bearer (\S+)$/.exec(header)?.[1];
    try {
      if (token === undefined) throw new Error("not a bearer token");
      request.user = await auth.verify(token);
    } catch {
      return reply
        .code(401)
        .header("www-authenticate", 'Bearer error="invalid_token"')
        .send({ error: { code: "UNAUTHENTICATED", message: "Invalid or expired token." } });
    }
  });

  await app.register(nervaPlugin, {
    requireAuth: true,
    timeoutSeconds: 30,
    // Identity comes from the verified token only; the client may pick one of its own sessions.
    resolve: (request) => identityOf(request.user, request.headers["x-session-id"]),
  });

  app.get("/", async () => ({
    name: "nerva-fastify-example",
    endpoints: ["POST /token", "POST /chat", "POST /chat/stream"],
  }));

  // Development convenience: anyone can get a token. A real app gets tokens from its identity provider.
  app.post<{ Body: { user: string; roles?: string[] } }>(
    "/token",
    {
      schema: {
        body: {
          type: "object",
          required: ["user"],
          properties: {
            user: { type: "string", pattern: USER_NAME.source },
            roles: { type: "array", items: { type: "string" } },
          },
        },
      },
    },
    async (request) => ({
      ...(await auth.mint(request.body.user, request.body.roles ?? [])),
      tokenType: "Bearer",
    }),
  );

  app.post<{ Body: ChatBody }>("/chat", { schema: chatSchema }, async (request, reply) => {
    const ctx = request.nervaCtx;
    const response = await orchestrator.handle(request.body.message, ctx);
    return reply.code(httpStatusOfResult(response)).send({ ...response, requestId: ctx.requestId });
  });

  app.post<{ Body: ChatBody }>("/chat/stream", { schema: chatSchema }, (request, reply) => {
    const ctx = request.nervaCtx;
    return sendSse(reply, orchestrator.stream(request.body.message, ctx), ctx);
  });

  return app;
}
