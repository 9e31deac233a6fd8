// The server side of the chat page, for any Express app: the chat routes of
// @nerva/core/ui-stream (POST /api/chat, GET /api/chat/:id/stream, POST /api/chat/:id/stop)
// and the built page (dist/page) as static files.
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ErrorCode, NervaError, type RunQueue } from "@nerva/core";
import { createChatRoutes } from "@nerva/core/ui-stream";
import { nervaChat } from "@nerva/express";
import express, { type Express, type RequestHandler } from "express";

/** What {@link mountChat} needs. */
export interface MountChatDeps {
  /** The queue the answers run on (a Runner executes them). */
  readonly queue: RunQueue;
  /** The agent that answers. */
  readonly handler: string;
  /** Where the page is served. Default `/`. */
  readonly pagePath?: string;
  /** The built page. Default: this package's `dist/page` (`pnpm --filter @nerva/chat-web build`). */
  readonly pageDir?: string;
}

/** This package's built page: dist/page beside server/ (sources) or dist/server (built). */
export function defaultPageDir(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const fromSource = join(here, "..", "dist", "page");
  return existsSync(fromSource) ? fromSource : join(here, "..", "page");
}

/**
 * The built chat page as static files, for an app that serves the chat routes itself (the page
 * calls `/api/chat`). Throws NervaError INVALID_OPTIONS when `pageDir` holds no built page.
 *
 * @example
 * app.use("/chat-ui", chatPage());
 */
export function chatPage(options: { pageDir?: string } = {}): RequestHandler {
  const pageDir = options.pageDir ?? defaultPageDir();
  if (!existsSync(join(pageDir, "index.html"))) {
    throw new NervaError(
      ErrorCode.INVALID_OPTIONS,
      `Invalid pageDir: ${join(pageDir, "index.html")} is missing. Build the page (\`pnpm --filter @nerva/chat-web build\`) or pass the directory of a built one.`,
      { issues: [{ path: "pageDir", message: "holds no index.html" }] },
    );
  }
  return express.static(pageDir);
}

/**
 * Mounts the chat page and its API on `app`. Call it after `nervaMiddleware()` (who the user is:
 * the chat routes need a signed-in user) and `express.json()`, and before `nervaErrorHandler()`.
 * The page calls `/api/chat`, so its API is mounted there whatever `pagePath` is.
 *
 * @example
 * app.use(nervaMiddleware({ requireAuth: true }), express.json());
 * mountChat(app, { queue, handler: "chat_agent" });
 * app.use(nervaErrorHandler());
 */
export function mountChat(app: Express, deps: MountChatDeps): void {
  const page = chatPage(deps.pageDir === undefined ? {} : { pageDir: deps.pageDir });
  app.use(nervaChat(createChatRoutes({ queue: deps.queue, handler: deps.handler })));
  app.use(deps.pagePath ?? "/", page);
}
