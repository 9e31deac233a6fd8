// The answer to a policy approval: a run paused on the key `$approval` (which no step or
// `waitForInput` key can take) is answered with `{ decision, note? }`. `RunQueue.resume` checks
// it here, before the run changes, and records who decided and when with it.
import { z } from "zod";
import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError, parseOrThrow } from "../errors.js";
import type { JsonValue } from "../types/agent.js";
import type { RunPause } from "./types.js";

/** The pause key of a policy approval. */
export const APPROVAL_KEY = "$approval";

/**
 * What an approver answers: `queue.resume(approvalId, { decision: "approve", note? }, { ctx })`.
 *
 * @example
 * await approvals.resume(approvalId, { decision: "deny", note: "amount too high" }, { ctx: managerCtx });
 */
export const ApprovalAnswerSchema = z
  .object({
    decision: z.enum(["approve", "deny"]),
    note: z.string().max(1000).optional(),
  })
  .strict();
export type ApprovalAnswer = z.infer<typeof ApprovalAnswerSchema>;

/** What the approval run records: the answer, who gave it and when (epoch ms). */
export interface ApprovalDecision {
  readonly decision: "approve" | "deny";
  readonly note: string | null;
  readonly decidedBy: string | null;
  readonly decidedAt: number;
}

/** The answer's JSON Schema, as an approval's pause shows it (`pause.data.schema`). */
export const APPROVAL_ANSWER_JSON_SCHEMA: Readonly<Record<string, JsonValue>> = Object.freeze({
  type: "object",
  properties: {
    decision: { enum: ["approve", "deny"] },
    note: { type: "string", maxLength: 1000 },
  },
  required: ["decision"],
  additionalProperties: false,
});

/**
 * Checks an answer to the approval run `id` paused on `pause` and returns the decision to
 * record: INVALID_INPUT naming the field for a bad answer, INVALID_STATE once the approval
 * expired (its requester must ask again).
 */
export function approvalDecision(
  id: string,
  pause: RunPause,
  value: unknown,
  ctx: ExecContext | undefined,
  now: number,
): ApprovalDecision {
  const answer = parseOrThrow(
    ApprovalAnswerSchema,
    value,
    ErrorCode.INVALID_INPUT,
    "value",
    'An approval takes { decision: "approve" | "deny", note?: string }.',
  );
  const expiresAt = pause.data["expiresAt"];
  if (typeof expiresAt === "number" && expiresAt <= now) {
    throw new NervaError(
      ErrorCode.INVALID_STATE,
      `Approval ${id} expired at ${new Date(expiresAt).toISOString()} and can no longer be decided; its requester must ask again.`,
      { details: { runId: id, status: "expired" } },
    );
  }
  return {
    decision: answer.decision,
    note: answer.note ?? null,
    decidedBy: ctx?.userId ?? null,
    decidedAt: now,
  };
}
