import { isExecContext } from "../context/check.js";
import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError, parseOrThrow, type ValidationIssue } from "../errors.js";
import { HandlerNameSchema } from "../runtime/options.js";
import { z } from "zod";
import type { ClassifyOptions, RouteCandidate, RouteResult } from "./types.js";

/** What ranking no candidate gives (the common case of a rule router falling to its default). */
const EMPTY: RouteResult = Object.freeze({ candidates: Object.freeze([]), best: null });

/** Zod schema of a list of handler descriptions with unique names. */
export const HandlerDescriptionsSchema = z
  .array(z.object({ name: HandlerNameSchema, description: z.string().min(1).max(10_000) }).strict())
  .min(1, "must list at least one handler")
  .superRefine((list, ctx) => {
    const seen = new Set<string>();
    list.forEach((h, i) => {
      if (seen.has(h.name)) {
        ctx.addIssue({ code: "custom", path: [i, "name"], message: `duplicate name "${h.name}"` });
      }
      seen.add(h.name);
    });
  });

/** Validates router options, throwing INVALID_OPTIONS that names the field. */
export function parseRouterOptions<S extends z.ZodType>(
  schema: S,
  options: unknown,
  fix: string,
): z.output<S> {
  return parseOrThrow(schema, options, ErrorCode.INVALID_OPTIONS, "options", fix);
}

/** Throws INVALID_INPUT unless `message` is a string and `ctx` an ExecContext. */
export function checkClassifyArgs(message: unknown, ctx: unknown): void {
  const issues: ValidationIssue[] = [];
  if (typeof message !== "string") issues.push({ path: "message", message: "must be a string" });
  if (!isExecContext(ctx)) issues.push({ path: "ctx", message: "must be an ExecContext" });
  if (issues.length > 0) {
    throw new NervaError(
      ErrorCode.INVALID_INPUT,
      `Invalid classify arguments: ${issues.map((i) => `${i.path} ${i.message}`).join("; ")}. Call classify(message: string, ctx: ExecContext).`,
      { issues },
    );
  }
}

/** The `only` option as a set, or `null` when every name may be considered. */
export function onlySet(options: ClassifyOptions | undefined): ReadonlySet<string> | null {
  return options?.only === undefined ? null : new Set(options.only);
}

/**
 * Turns raw candidates into a {@link RouteResult}: drops names the context may not use (and
 * names outside `only`), drops non-finite scores, clamps scores to [0, 1], keeps the best score
 * per name, and sorts descending (stable, so ties keep the input order).
 */
export function rank(
  raw: readonly RouteCandidate[],
  ctx: ExecContext,
  only: ReadonlySet<string> | null,
): RouteResult {
  if (raw.length === 0) return EMPTY;
  const byName = new Map<string, RouteCandidate>();
  for (const c of raw) {
    if (!Number.isFinite(c.score)) continue;
    if (only !== null && !only.has(c.name)) continue;
    if (!ctx.permissions.canUseAgent(c.name)) continue;
    const score = c.score < 0 ? 0 : c.score > 1 ? 1 : c.score;
    const previous = byName.get(c.name);
    if (previous === undefined || score > previous.score) {
      // Map.set on an existing key keeps its position, so ties stay in first-seen order.
      byName.set(c.name, Object.freeze({ name: c.name, score, reason: c.reason }));
    }
  }
  if (byName.size === 0) return EMPTY;
  const candidates = [...byName.values()].sort((a, b) => b.score - a.score);
  return Object.freeze({ candidates: Object.freeze(candidates), best: candidates[0] ?? null });
}

/** Short quoted preview of a text for reasons. */
export function preview(text: string, max = 60): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}
