// The page's demo server: Express with the example apps' dev JWT auth, the chat page and its
// API (mountChat) on a SQLite run store, and a Runner executing the demo agent.
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { RunQueue, Runner } from "@nerva/core";
import { SqliteRunStore } from "@nerva/core/sqlite";
import { nervaErrorHandler, nervaMiddleware } from "@nerva/express";
import { createAuth, identityOf, type DevAuth, type TokenClaims } from "@nerva/example-kit";
import express, { type Request } from "express";
import { CHAT_WEB_AGENT, chatWebRuntime } from "./demo-agent.js";
import { mountChat } from "./mount-chat.js";

/** Options of {@link startChatWebServer}. */
export interface ChatWebServerOptions {
  /** The SQLite file of the runs (answers and approvals). */
  readonly dbPath: string;
  /** Default 0: any free port. */
  readonly port?: number;
  /** Pause between two words of an answer. Default 60 ms. */
  readonly tokenDelayMs?: number;
  /** The built page (see `mountChat`). */
  readonly pageDir?: string;
  /** Signs the dev tokens; default a random secret. */
  readonly jwtSecret?: string;
  /** Called each time the refund tool runs. */
  readonly onRefund?: () => void;
}

/** A running demo server. */
export interface ChatWebServer {
  readonly url: string;
  readonly queue: RunQueue;
  readonly auth: DevAuth;
  close(): Promise<void>;
}

/**
 * Starts the demo on 127.0.0.1: the page at `/`, its API at `/api/chat`, who the user is from
 * a bearer token `auth.mint(user, roles)` made (the page sends the one in its URL's `token`).
 *
 * @example
 * const server = await startChatWebServer({ dbPath: "chat-web.db", port: 3000 });
 * const { token } = await server.auth.mint("alice", ["customer"]);
 * console.log(`${server.url}/?token=${token}`);
 */
export async function startChatWebServer(o: ChatWebServerOptions): Promise<ChatWebServer> {
  const queue = new RunQueue({
    store: new SqliteRunStore({ path: o.dbPath, pollSeconds: 0.05 }),
    name: "chat",
    retry: { maxAttempts: 1 },
  });
  const approvals = new RunQueue({
    store: new SqliteRunStore({ path: o.dbPath }),
    name: "approvals",
  });
  const runtime = chatWebRuntime({
    approvals,
    tokenDelayMs: o.tokenDelayMs ?? 60,
    ...(o.onRefund === undefined ? {} : { onRefund: o.onRefund }),
  });
  const runner = new Runner({ queue, runtime, heartbeatSeconds: 1, leaseSeconds: 5 });
  await runner.start();

  const auth = createAuth(o.jwtSecret);
  const users = new WeakMap<Request, TokenClaims>();
  const app = express();
  app.use((req, _res, next) => {
    const header = req.get("authorization") ?? "";
    if (!header.startsWith("Bearer ")) return next();
    auth.verify(header.slice("Bearer ".length)).then(
      (claims) => {
        users.set(req, claims);
        next();
      },
      () => next(),
    );
  });
  app.use(nervaMiddleware({ resolve: (req) => identityOf(users.get(req), undefined) }));
  app.use(express.json());
  mountChat(app, {
    queue,
    handler: CHAT_WEB_AGENT,
    ...(o.pageDir === undefined ? {} : { pageDir: o.pageDir }),
  });
  app.use(nervaErrorHandler());

  const server = http.createServer(app);
  server.listen(o.port ?? 0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    queue,
    auth,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await runner.stop({ graceSeconds: 1 });
      await queue.store.close();
      await approvals.store.close();
    },
  };
}
