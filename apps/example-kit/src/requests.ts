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
 * The role every dev token carries: its user may approve their own bookings (`book_flight`, see
 * `examplePolicy`), which a chat page shows as a tool call to approve.
 *
 * @example
 * const { roles } = tokenRequestOf({ user: "alice" }); // ["traveller"]
 */
export const TRAVELLER_ROLE = "traveller";

/**
 * The `{ user, roles }` of a dev `/token` request (see `USER_NAME`): the roles asked for, plus
 * {@link TRAVELLER_ROLE}. Throws NervaError INVALID_INPUT (400) otherwise.
 *
 * @example
 * const { user, roles } = tokenRequestOf(jsonBodyOf(req));
 */
export function tokenRequestOf(body: Record<string, unknown>): { user: string; roles: string[] } {
  const { user, roles = [] } = parse(
    TokenRequest,
    body,
    'Send {"user": "alice", "roles"?: ["member"]}.',
  );
  return { user, roles: [...new Set([...roles, TRAVELLER_ROLE])] };
}

const Id = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, "must be an id this service gave");
const ApprovalDecision = z.object({
  decision: z.enum(["approve", "deny"]),
  note: z.string().min(1).max(500).optional(),
});
const ApprovalId = z.object({ approvalId: Id });

/**
 * The `{ decision, note? }` of `POST /approvals/:id`: `decision` is `"approve"` or `"deny"`.
 * Throws NervaError INVALID_INPUT (400) otherwise.
 *
 * @example
 * const { decision } = approvalDecisionOf(jsonBodyOf(req));
 */
export function approvalDecisionOf(body: Record<string, unknown>): {
  decision: "approve" | "deny";
  note?: string;
} {
  return parse(ApprovalDecision, body, 'Send {"decision": "approve"} or {"decision": "deny"}.');
}

/**
 * The `{ approvalId }` of `POST /chat/resume`. Throws NervaError INVALID_INPUT (400) otherwise.
 *
 * @example
 * const { approvalId } = approvalIdOf(jsonBodyOf(req));
 */
export function approvalIdOf(body: Record<string, unknown>): { approvalId: string } {
  return parse(ApprovalId, body, 'Send {"approvalId": "<error.details.approvalId of /chat>"}.');
}

/**
 * A run or approval id from a path (`/runs/:id`, `/approvals/:id`). Throws NervaError
 * INVALID_INPUT (400) for anything that cannot be an id.
 *
 * @example
 * const id = runIdOf(req.params.id);
 */
export function runIdOf(value: unknown): string {
  const parsed = Id.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new NervaError(
    ErrorCode.INVALID_INPUT,
    `Invalid path: id: ${parsed.error.issues[0]?.message ?? "invalid"}. Use the id the service answered.`,
    { issues: [{ path: "params.id", message: "must be an id this service gave" }] },
  );
}
