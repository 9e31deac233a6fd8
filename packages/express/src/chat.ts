import { jsonBodyOf } from "@nerva/core/http";
import type { ChatRoutes } from "@nerva/core/ui-stream";
import type { Request, RequestHandler } from "express";

/**
 * Mounts the chat routes of `@nerva/core/ui-stream` (`createChatRoutes`) on Express, for the AI
 * SDK's `useChat` with `DefaultChatTransport` and resumable streams:
 * `POST {path}` starts an answer and streams it, `GET {path}/:id/stream` resumes the chat's
 * active answer (204 when none), `POST {path}/:id/stop` cancels it. Needs `nervaMiddleware()`
 * and a JSON body parser before it and `nervaErrorHandler()` after it (refusals arrive there
 * before anything was written). Other requests pass through.
 *
 * @example
 * app.use(nervaMiddleware(), express.json());
 * app.use(nervaChat(createChatRoutes({ queue, handler: "chat_agent" })));
 * app.use(nervaErrorHandler());
 */
export function nervaChat(chat: ChatRoutes, options: { path?: string } = {}): RequestHandler {
  const base = (options.path ?? "/api/chat").replace(/\/+$/, "");
  return function nervaChatRoutes(req, res, next) {
    let work: Promise<unknown>;
    try {
      const route = routeOf(req, base);
      if (route === null) {
        next();
        return;
      }
      const ctx = req.nervaCtx;
      if (route.kind === "send") {
        work = chat.send({ body: jsonBodyOf(req), ctx, res });
      } else if (route.kind === "resume") {
        work = chat.resume({ chatId: route.chatId, ctx, headers: req.headers, res });
      } else {
        work = chat.stop({ chatId: route.chatId, ctx }).then((run) => {
          res.json({ runId: run.id, status: run.status });
        });
      }
    } catch (err) {
      next(err);
      return;
    }
    work.catch(next);
  };
}

type Route = { kind: "send" } | { kind: "resume" | "stop"; chatId: string };

function routeOf(req: Request, base: string): Route | null {
  const path = req.path;
  if (req.method === "POST" && (path === base || path === `${base}/`)) return { kind: "send" };
  if (!path.startsWith(`${base}/`)) return null;
  const rest = path.slice(base.length + 1).split("/");
  if (rest.length !== 2 || rest[0] === undefined || rest[0] === "") return null;
  // A malformed escape is the chat id's checker's to refuse (INVALID_INPUT), not a URIError.
  let chatId: string;
  try {
    chatId = decodeURIComponent(rest[0]);
  } catch {
    chatId = rest[0];
  }
  if (req.method === "GET" && rest[1] === "stream") return { kind: "resume", chatId };
  if (req.method === "POST" && rest[1] === "stop") return { kind: "stop", chatId };
  return null;
}
