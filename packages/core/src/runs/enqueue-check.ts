// The checks of the common enqueue that skip the schemas: each accepts a subset of what its
// schema accepts and gives back what the schema would, else answers `null` for the schema to
// check (and word the error). A schema parse costs more than the rest of an in-memory enqueue.
import type { z } from "zod";
import { ExecContext } from "../context/exec-context.js";
import { HANDLER_NAME } from "../runtime/options.js";
import { ValidatedInput, type AgentInput } from "../types/agent.js";
import type { EnqueueOptionsSchema } from "./options.js";

const ENQUEUE_KEYS: ReadonlySet<string> = new Set([
  "handler",
  "input",
  "ctx",
  "idempotencyKey",
  "priority",
  "delaySeconds",
  "timeoutSeconds",
  "maxReclaims",
]);
const isInt = (v: unknown, min: number, max: number): boolean =>
  Number.isInteger(v) && (v as number) >= min && (v as number) <= max;

/**
 * The options of the common enqueue (one handler, no retry override) as the schema would give
 * them back, checked without it; `null` for anything else, which the schema then checks and, if
 * wrong, words the error of. Accepts a subset of what the schema accepts: the outcome is the
 * same, for a fraction of the cost of a schema parse on every enqueue.
 */
export function plainEnqueue(options: unknown): z.output<typeof EnqueueOptionsSchema> | null {
  if (typeof options !== "object" || options === null) return null;
  if (Object.getPrototypeOf(options) !== Object.prototype) return null;
  const o = options as Record<string, unknown>;
  for (const key of Object.keys(o)) if (!ENQUEUE_KEYS.has(key)) return null;
  const { handler, ctx, idempotencyKey, priority, delaySeconds, timeoutSeconds, maxReclaims } = o;
  if (typeof handler !== "string" || !HANDLER_NAME.test(handler)) return null;
  if (!(ctx instanceof ExecContext)) return null;
  if (
    idempotencyKey !== undefined &&
    (typeof idempotencyKey !== "string" || idempotencyKey.length < 1 || idempotencyKey.length > 256)
  ) {
    return null;
  }
  if (priority !== undefined && !isInt(priority, 0, 2_097_151)) return null;
  if (
    delaySeconds !== undefined &&
    !(Number.isFinite(delaySeconds) && (delaySeconds as number) >= 0)
  ) {
    return null;
  }
  if (
    timeoutSeconds !== undefined &&
    !(Number.isFinite(timeoutSeconds) && (timeoutSeconds as number) > 0)
  ) {
    return null;
  }
  if (maxReclaims !== undefined && !isInt(maxReclaims, 0, 1000)) return null;
  return {
    ...o,
    handler,
    ctx,
    priority: (priority as number | undefined) ?? 0,
    delaySeconds: (delaySeconds as number | undefined) ?? 0,
  } as z.output<typeof EnqueueOptionsSchema>;
}

const INPUT_KEYS: ReadonlySet<string> = new Set(["message", "args", "tools", "history"]);

/**
 * An input of a message and string args (what most enqueues give), as AgentInputSchema would
 * give it back, checked without it; `null` for anything else, which the schema then checks.
 */
export function plainInput(input: unknown): AgentInput | null {
  if (typeof input !== "object" || input === null) return null;
  if (Object.getPrototypeOf(input) !== Object.prototype) return null;
  const i = input as Record<string, unknown>;
  for (const key of Object.keys(i)) if (!INPUT_KEYS.has(key)) return null;
  const { message, args, tools, history } = i;
  if (typeof message !== "string" || message.length > 1_000_000) return null;
  if (!(tools === undefined || (Array.isArray(tools) && tools.length === 0))) return null;
  if (!(history === undefined || (Array.isArray(history) && history.length === 0))) return null;
  if (args === undefined) return new ValidatedInput(message);
  if (typeof args !== "object" || args === null) return null;
  if (Object.getPrototypeOf(args) !== Object.prototype) return null;
  for (const value of Object.values(args)) if (typeof value !== "string") return null;
  return new ValidatedInput(message, args as Record<string, string>);
}
