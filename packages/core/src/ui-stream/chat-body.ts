import { z } from "zod";
import { ErrorCode, NervaError, parseOrThrow } from "../errors.js";

/** A chat id: what the client's `useChat({ id })` names the chat; also a URL path segment. */
export const ChatIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,200}$/, "must be 1-200 letters, digits, '_' or '-'");

const PartSchema = z.looseObject({ type: z.string().min(1).max(200), text: z.string().optional() });

const MessageSchema = z.looseObject({
  id: z.string().min(1).max(200),
  role: z.enum(["system", "user", "assistant"]),
  parts: z.array(PartSchema).max(1000),
});

/**
 * What the AI SDK's `DefaultChatTransport` sends to `POST /api/chat` (the `ai` package, v6:
 * ui/http-chat-transport.ts): the chat id, its messages, the trigger and, to regenerate, the
 * message id. Extra fields (the transport's `body` option) are allowed and ignored.
 */
export const ChatRequestSchema = z.looseObject({
  id: ChatIdSchema,
  messages: z.array(MessageSchema).min(1).max(1000),
  trigger: z.enum(["submit-message", "regenerate-message"]),
  messageId: z.string().max(200).nullable().optional(),
});

/** A checked chat request: the text of its last user message and the turns before it. */
export interface ChatTurn {
  readonly chatId: string;
  /** The last user message's id: a retried POST of the same message is the same run. */
  readonly messageId: string;
  readonly trigger: string;
  readonly text: string;
  readonly history: readonly { readonly role: string; readonly content: string }[];
}

function textOf(parts: readonly z.infer<typeof PartSchema>[]): string {
  return parts
    .filter((p) => p.type === "text" && typeof p.text === "string")
    .map((p) => p.text)
    .join("");
}

/**
 * Checks a chat request body (INVALID_INPUT naming the field, an HTTP 400): the last message must
 * be the user's, with text.
 */
export function parseChatRequest(body: unknown): ChatTurn {
  const r = parseOrThrow(
    ChatRequestSchema,
    body,
    ErrorCode.INVALID_INPUT,
    "body",
    "Send what the AI SDK's DefaultChatTransport sends: { id, messages: [{ id, role, parts }], trigger }.",
  );
  const index = r.messages.length - 1;
  const last = r.messages[index];
  const text = last === undefined ? "" : textOf(last.parts);
  if (last?.role !== "user" || text === "") {
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      `Invalid body.messages[${index}]: the last message must be the user's, with a text part.`,
      { issues: [{ path: `body.messages.${index}`, message: "must be a user message with text" }] },
    );
  }
  const history = r.messages
    .slice(0, index)
    .map((m) => ({ role: m.role, content: textOf(m.parts) }))
    .filter((h) => h.content !== "");
  return { chatId: r.id, messageId: last.id, trigger: r.trigger, text, history };
}

/** The client's answer to a tool call's approval request (`addToolApprovalResponse`). */
export interface ChatApprovalAnswer {
  readonly chatId: string;
  /** The `approvalId` of the `tool-approval-request` it answers. */
  readonly approvalId: string;
  readonly approved: boolean;
  readonly reason?: string;
}

const ApprovalSchema = z.object({
  id: z.string().min(1).max(200),
  approved: z.boolean(),
  reason: z.string().max(1000).optional(),
});

/**
 * The approval answer a chat request carries, or `null` when it carries none. `useChat` sends
 * one as the assistant message it continues (the last message), whose tool part is in state
 * `approval-responded` with `approval: { id, approved, reason? }` (the `ai` package, v6:
 * ui/chat.ts `addToolApprovalResponse`, ui/ui-messages.ts). INVALID_INPUT naming the field for a
 * malformed body or approval.
 */
export function parseApprovalAnswer(body: unknown): ChatApprovalAnswer | null {
  const r = parseOrThrow(
    ChatRequestSchema,
    body,
    ErrorCode.INVALID_INPUT,
    "body",
    "Send what the AI SDK's DefaultChatTransport sends: { id, messages: [{ id, role, parts }], trigger }.",
  );
  const index = r.messages.length - 1;
  const last = r.messages[index];
  if (last?.role !== "assistant") return null;
  for (let i = last.parts.length - 1; i >= 0; i--) {
    const part = last.parts[i] as Record<string, unknown>;
    if (part["state"] !== "approval-responded") continue;
    const path = `body.messages.${index}.parts.${i}.approval`;
    const a = parseOrThrow(
      ApprovalSchema,
      part["approval"],
      ErrorCode.INVALID_INPUT,
      path,
      "Answer with useChat's addToolApprovalResponse({ id, approved, reason? }).",
    );
    return {
      chatId: r.id,
      approvalId: a.id,
      approved: a.approved,
      ...(a.reason === undefined ? {} : { reason: a.reason }),
    };
  }
  return null;
}

/** Checks a chat id taken from a URL (INVALID_INPUT, an HTTP 400). */
export function parseChatId(id: unknown): string {
  return parseOrThrow(
    ChatIdSchema,
    id,
    ErrorCode.INVALID_INPUT,
    "chatId",
    "Use the chat's id, as useChat({ id }) names it.",
  );
}
