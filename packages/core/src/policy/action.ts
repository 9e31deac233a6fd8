import { z } from "zod";
import { ErrorCode, parseOrThrow } from "../errors.js";
import { Checkpoint, type PolicyAction } from "./types.js";

/** The schema of a {@link PolicyAction}, with the checkpoint rules of each field. */
export const ActionSchema = z
  .object({
    checkpoint: z.enum([
      Checkpoint.BEFORE_ROUTE,
      Checkpoint.BEFORE_INVOKE,
      Checkpoint.DURING_EXECUTION,
    ]),
    kind: z.enum(["agent", "tool", "delegate", "model"]).optional(),
    name: z.string().min(1).optional(),
    message: z.string().optional(),
    args: z.unknown().optional(),
  })
  .strict()
  .refine((a) => a.checkpoint !== Checkpoint.BEFORE_ROUTE || a.message !== undefined, {
    path: ["message"],
    message: "before_route needs the message",
  })
  .refine(
    (a) =>
      a.checkpoint === Checkpoint.BEFORE_ROUTE || (a.kind !== undefined && a.name !== undefined),
    { path: ["name"], message: "before_invoke and during_execution need kind and name" },
  );

/** A validated action. */
export type ParsedAction = z.output<typeof ActionSchema>;

const ACTION_KEYS = new Set(["checkpoint", "kind", "name", "message", "args"]);
const ACTION_KINDS: ReadonlySet<unknown> = new Set(["agent", "tool", "delegate", "model"]);

/**
 * A plainly valid action without a schema run; `null` sends everything else through
 * {@link ActionSchema}, which also produces the field-naming errors.
 */
export function quickAction(v: unknown): ParsedAction | null {
  if (typeof v !== "object" || v === null) return null;
  for (const k in v) if (!ACTION_KEYS.has(k)) return null;
  const a = v as PolicyAction;
  if (a.message !== undefined && typeof a.message !== "string") return null;
  if (a.checkpoint === Checkpoint.BEFORE_ROUTE) {
    if (a.message === undefined || a.kind !== undefined || a.name !== undefined) return null;
    return a;
  }
  if (a.checkpoint !== Checkpoint.BEFORE_INVOKE && a.checkpoint !== Checkpoint.DURING_EXECUTION) {
    return null;
  }
  if (!ACTION_KINDS.has(a.kind) || typeof a.name !== "string" || a.name === "") return null;
  return a;
}

/** Validates an action; throws NervaError INVALID_INPUT naming the field. */
export function parseAction(action: unknown): ParsedAction {
  return (
    quickAction(action) ??
    parseOrThrow(
      ActionSchema,
      action,
      ErrorCode.INVALID_INPUT,
      "action",
      "Pass { checkpoint, message } before routing, or { checkpoint, kind, name, message | args }.",
    )
  );
}
