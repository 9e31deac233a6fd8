import { ErrorCode, NervaError } from "@nerva/core";
import { z } from "zod";
import { USER_NAME } from "./auth.js";

/** Runs `schema` on a body `jsonBodyOf` already checked (an object, depth and size bounded). */
function parse<S extends z.ZodType>(
  schema: S,
  body: Record<string, unknown>,
  fix: string,
): z.output<S> {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((issue) => ({
    path: ["body", ...issue.path.map(String)].join("."),
    message: issue.message,
  }));
  throw new NervaError(
    ErrorCode.INVALID_INPUT,
    `Invalid body: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}. ${fix}`,
    { issues },
  );
}

const ChatRequest = z.object({ message: z.string().min(1).max(10_000) });
const TokenRequest = z.object({
  user: z.string().regex(USER_NAME),
  roles: z.array(z.string().min(1).max(64)).max(20).optional(),
});

/**
 * The `{ message }` of a chat request, from the body `jsonBodyOf(req)` returned: a string of 1 to
 * 10,000 characters, never coerced (`42` and `null` are refused). Throws NervaError INVALID_INPUT
 * (400) otherwise.
 *
 * @example
 * const { message } = chatRequestOf(jsonBodyOf(req));
 */
export function chatRequestOf(body: Record<string, unknown>): { message: string } {
  return parse(ChatRequest, body, 'Send {"message": "your question"}.');
}

/**
 * The `{ user, roles? }` of a dev `/token` request (see `USER_NAME`). Throws NervaError
 * INVALID_INPUT (400) otherwise.
 *
 * @example
 * const { user, roles = [] } = tokenRequestOf(jsonBodyOf(req));
 */
export function tokenRequestOf(body: Record<string, unknown>): { user: string; roles?: string[] } {
  return parse(TokenRequest, body, 'Send {"user": "alice", "roles"?: ["member"]}.');
}
