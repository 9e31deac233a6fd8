import type { z } from "zod";
import { ErrorCode, NervaError, parseOrThrow } from "../errors.js";
import { checkUntrustedJson } from "../internal/json-limits.js";
import { loadSchemas } from "./load.js";

/**
 * What Nerva reads of AG-UI's `RunAgentInput`, once @ag-ui/core's own schema checked it whole.
 * Declared here so that Nerva's types do not need @ag-ui/core installed (it is loaded on use).
 *
 * @example
 * const input: AgUiRunInput = await parseRunAgentInput(req.body);
 */
export interface AgUiRunInput {
  readonly threadId: string;
  readonly runId: string;
  readonly messages: readonly { readonly role: string; readonly content?: unknown }[];
  readonly state?: unknown;
  readonly resume?:
    | readonly {
        readonly interruptId: string;
        readonly status: "resolved" | "cancelled";
        readonly payload?: unknown;
      }[]
    | undefined;
  readonly [field: string]: unknown;
}

const FIX =
  "Send an AG-UI RunAgentInput: { threadId, runId, messages, state?, tools?, context?, forwardedProps?, resume? }.";

/**
 * Checks a request body as AG-UI's `RunAgentInput` with @ag-ui/core's own schema
 * (`RunAgentInputSchema`), after bounding its depth and size: INVALID_INPUT naming the field (an
 * HTTP 400) when it is not one. MISSING_DEPENDENCY when `@ag-ui/core` is not installed.
 *
 * @example
 * const input = await parseRunAgentInput(req.body);
 */
export async function parseRunAgentInput(body: unknown): Promise<AgUiRunInput> {
  checkUntrustedJson(body, "body", FIX);
  const { RunAgentInputSchema } = await loadSchemas();
  return parseOrThrow(
    RunAgentInputSchema as unknown as z.ZodType<AgUiRunInput>,
    body,
    ErrorCode.INVALID_INPUT,
    "body",
    FIX,
  );
}

type Message = AgUiRunInput["messages"][number];

/** The text of a message: its string content, or its text parts joined. */
function textOf(m: Message): string {
  const content = (m as { content?: unknown }).content;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((p: unknown) =>
      typeof p === "object" && p !== null && (p as { type?: unknown }).type === "text"
        ? String((p as { text?: unknown }).text ?? "")
        : "",
    )
    .join("");
}

/** A RunAgentInput's last user message, and the user and assistant turns before it. */
export interface AgUiTurn {
  readonly text: string;
  readonly history: { role: string; content: string }[];
}

/** The turn an agent answers: the last message must be the user's, with text (INVALID_INPUT). */
export function turnOf(input: AgUiRunInput): AgUiTurn {
  const index = input.messages.length - 1;
  const last = input.messages[index];
  const text = last === undefined ? "" : textOf(last);
  if (last?.role !== "user" || text === "") {
    const at = index < 0 ? "body.messages" : `body.messages[${index}]`;
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      `Invalid ${at}: the last message must be the user's, with text. Add the user's message to the agent's messages before runAgent().`,
      {
        issues: [
          { path: at.replace(/\[(\d+)\]/, ".$1"), message: "must be a user message with text" },
        ],
      },
    );
  }
  const history = input.messages
    .slice(0, index)
    .filter((m) => m.role === "user" || m.role === "assistant")
    .map((m) => ({ role: m.role, content: textOf(m) }))
    .filter((h) => h.content !== "");
  return { text, history };
}
