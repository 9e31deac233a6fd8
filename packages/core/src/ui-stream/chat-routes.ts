import { createHash } from "node:crypto";
import type { IncomingHttpHeaders, ServerResponse } from "node:http";
import { z } from "zod";
import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError, parseOrThrow } from "../errors.js";
import { lastEventSeq } from "../http/last-event-id.js";
import type { SSEOutcome } from "../http/sse-event-source.js";
import { RunQueue } from "../runs/run-queue.js";
import { RunStatus, type RunRecord } from "../runs/types.js";
import {
  parseApprovalAnswer,
  parseChatId,
  parseChatRequest,
  type ChatApprovalAnswer,
} from "./chat-body.js";
import { writeUIMessageStream } from "./stream.js";

/** The input arg naming the chat a run answers: how any replica finds a chat's active run. */
export const CHAT_ID_ARG = "chatId";

const ACTIVE = [RunStatus.RUNNING, RunStatus.PENDING, RunStatus.PAUSED] as const;
/** Pages of a user's active runs looked through for a chat's (100 runs each). */
const MAX_PAGES = 10;

const ChatRoutesOptionsSchema = z
  .object({
    queue: z.custom<RunQueue>((v) => v instanceof RunQueue, "must be a RunQueue"),
    handler: z.string().min(1).max(200),
    history: z.enum(["client", "memory"]).default("client"),
    heartbeatSeconds: z.union([z.number().positive().finite(), z.literal(false)]).optional(),
  })
  .strict();

/**
 * Options of {@link createChatRoutes}.
 *
 * @example
 * const options: ChatRoutesOptions = { queue, handler: "chat_agent", history: "memory" };
 */
export type ChatRoutesOptions = z.input<typeof ChatRoutesOptionsSchema>;

/**
 * The routes of a `useChat` frontend, framework-agnostic (see {@link createChatRoutes}). Each
 * throws a `NervaError` (map it with `toHttpError`) before it writes anything.
 *
 * @example
 * app.post("/api/chat", (req, res, next) => chat.send({ body: req.body, ctx: req.nervaCtx, res }).catch(next));
 */
export interface ChatRoutes {
  /**
   * `POST /api/chat`: starts the answer to the last user message as a run and streams it; or,
   * when the last message carries the answer to a tool call's approval request, answers the
   * chat's run waiting for it and streams the rest of its answer (INVALID_STATE, a 409, when
   * no run of this user's chat waits for that approval).
   */
  send(request: {
    body: unknown;
    ctx: ExecContext;
    res: ServerResponse;
    /** Called once the checks passed, right before `res` is written (a framework hands it over). */
    beforeWrite?: () => void;
  }): Promise<SSEOutcome>;
  /** `GET /api/chat/:id/stream`: the active run's stream from the log; 204 when none. */
  resume(request: {
    chatId: unknown;
    ctx: ExecContext;
    headers: IncomingHttpHeaders;
    res: ServerResponse;
    /** As in `send`. */
    beforeWrite?: () => void;
  }): Promise<SSEOutcome | "none">;
  /** `POST /api/chat/:id/stop`: cancels the active run (NOT_FOUND, a 404, when none). */
  stop(request: { chatId: unknown; ctx: ExecContext }): Promise<RunRecord>;
}

/**
 * The server side of the AI SDK's `useChat` with resumable streams, over durable runs. `send`
 * takes what `DefaultChatTransport` posts (`{ id, messages, trigger, messageId }`, checked), makes
 * the last user message the input of a run of `handler` on `queue` — earlier turns go in
 * `input.history` with `history: "client"`, or none with `"memory"` (the agent recalls them from
 * Nerva's memory) — and streams the run's events as the UI message stream. The chat id is the
 * run's `chatId` input arg, so any replica on the same store finds the chat's active run: `resume`
 * replays it from its first event (what `DefaultChatTransport` expects: its `resumeStreamIsReplay`)
 * or after `Last-Event-ID`, and answers 204 when the chat has none; `stop` cancels it. A closed
 * tab only stops the reading: the run goes on, and a reconnect gets it whole. Only the run's
 * user finds it: a request without a user is refused (UNAUTHENTICATED), another user's chat is
 * not found. A Runner on the same queue executes the runs. A tool call that pauses the run for
 * its approval (`kit.tools.call`, an approval its requester may give) ends the message at the
 * protocol's `tool-approval-request`; the client's answer, posted as `useChat` posts it, resumes
 * the run (docs/frontends.md, "Tool approvals").
 *
 * @example
 * const chat = createChatRoutes({ queue, handler: "chat_agent" });
 * app.post("/api/chat", (req, res, next) => chat.send({ body: req.body, ctx: req.nervaCtx, res }).catch(next));
 */
export function createChatRoutes(options: ChatRoutesOptions): ChatRoutes {
  const o = parseOrThrow(
    ChatRoutesOptionsSchema,
    options,
    ErrorCode.INVALID_OPTIONS,
    "options",
    'Pass { queue: a RunQueue, handler: the agent that answers, history?: "client" | "memory" }.',
  );
  const queue = o.queue;
  const stream = (res: ServerResponse, run: RunRecord, afterSeq: number): Promise<SSEOutcome> =>
    writeUIMessageStream(res, queue.events(run.id), {
      runId: run.id,
      afterSeq,
      // A tool call's approval request ends the message while the run waits for its answer.
      waitsAt: async (seq) => {
        const now = await queue.get(run.id);
        return now?.status === RunStatus.PAUSED && now.lastSeq === seq;
      },
      ...(o.heartbeatSeconds === undefined ? {} : { heartbeatSeconds: o.heartbeatSeconds }),
    });

  return {
    async send({ body, ctx, res, beforeWrite }) {
      const userId = ownerOf(ctx);
      const approval = parseApprovalAnswer(body);
      if (approval !== null) {
        const { run, afterSeq } = await answerApproval(queue, userId, approval, ctx);
        beforeWrite?.();
        return stream(res, run, afterSeq);
      }
      const turn = parseChatRequest(body);
      const run = await queue.enqueue({
        handler: o.handler,
        input: {
          message: turn.text,
          args: { [CHAT_ID_ARG]: turn.chatId },
          history: o.history === "client" ? turn.history.map((h) => ({ ...h })) : [],
        },
        ctx,
        // A retried POST of the same message streams the run it started instead of a second one.
        idempotencyKey: `chat:${createHash("sha256")
          .update(JSON.stringify([userId, turn.chatId, turn.messageId, turn.trigger]))
          .digest("base64url")}`,
      });
      beforeWrite?.();
      return stream(res, run, 0);
    },

    async resume({ chatId, ctx, headers, res, beforeWrite }) {
      const userId = ownerOf(ctx);
      const id = parseChatId(chatId);
      const afterSeq = lastEventSeq({ headers });
      const run = await activeRun(queue, userId, id);
      beforeWrite?.();
      if (run === null) {
        res.statusCode = 204;
        res.end();
        return "none";
      }
      return stream(res, run, afterSeq);
    },

    async stop({ chatId, ctx }) {
      const userId = ownerOf(ctx);
      const id = parseChatId(chatId);
      const run = await activeRun(queue, userId, id);
      if (run === null) {
        throw new NervaError(ErrorCode.NOT_FOUND, `Chat ${id} has no answer in progress.`, {
          details: { chatId: id },
        });
      }
      return queue.cancel(run.id, { reason: "stopped by the user" });
    },
  };
}

/**
 * Answers the tool call approval the chat's active run waits for with the client's answer (the
 * one resume call; only the run's user finds the run and may answer its pause). Returns the run
 * and the seq of its pause: the client already shows everything up to it. INVALID_STATE (a 409)
 * when the chat has no run waiting for that approval.
 */
async function answerApproval(
  queue: RunQueue,
  userId: string,
  a: ChatApprovalAnswer,
  ctx: ExecContext,
): Promise<{ run: RunRecord; afterSeq: number }> {
  const run = await activeRun(queue, userId, a.chatId);
  const pause = run?.status === RunStatus.PAUSED ? run.pause : null;
  if (run === null || pause === null || pause.data["approvalId"] !== a.approvalId) {
    throw new NervaError(
      ErrorCode.INVALID_STATE,
      `Chat ${a.chatId} has no tool call waiting for approval ${a.approvalId}: it was answered already, or its answer was stopped. Send a new message.`,
      { details: { chatId: a.chatId, approvalId: a.approvalId } },
    );
  }
  const answer = {
    decision: a.approved ? "approve" : "deny",
    ...(a.reason === undefined ? {} : { note: a.reason }),
  };
  await queue.resume(run.id, answer, { key: pause.key, ctx });
  return { run, afterSeq: run.lastSeq };
}

/** The user a chat belongs to: the only one who may resume or stop its runs. */
function ownerOf(ctx: ExecContext): string {
  if (ctx.userId !== null) return ctx.userId;
  throw new NervaError(
    ErrorCode.UNAUTHENTICATED,
    "A chat needs a signed-in user: its runs are found again by their user. Authenticate the request before the chat routes.",
  );
}

/**
 * The newest running, pending or paused run of `userId` answering `chatId`, from the store (so
 * any replica finds it), or `null`.
 */
export async function activeRun(
  queue: RunQueue,
  userId: string,
  chatId: string,
): Promise<RunRecord | null> {
  let found: RunRecord | null = null;
  for (const status of ACTIVE) {
    let cursor: string | null = null;
    for (let page = 0; page < MAX_PAGES; page++) {
      const { runs, nextCursor } = await queue.list({ status, userId, limit: 100, cursor });
      for (const run of runs) {
        if (run.input.args[CHAT_ID_ARG] !== chatId) continue;
        if (found === null || run.createdAt > found.createdAt) found = run;
        break;
      }
      if (nextCursor === null || found?.status === status) break;
      cursor = nextCursor;
    }
  }
  return found;
}
