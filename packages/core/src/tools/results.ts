import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, type NervaError } from "../errors.js";
import { ToolStatus, type ToolInfo, type ToolResult } from "./types.js";

/** Milliseconds since `startedMs` (a `performance.now()` reading), never negative. */
export function elapsedSince(startedMs: number): number {
  return Math.max(0, performance.now() - startedMs);
}

/** A frozen ToolResult; `output` is `null` unless the call succeeded. */
export function toolResult(
  status: ToolStatus,
  startedMs: number,
  fields: { output?: unknown; error?: string | null } = {},
): ToolResult {
  return Object.freeze({
    status,
    output: status === ToolStatus.SUCCESS ? (fields.output ?? null) : null,
    error: status === ToolStatus.SUCCESS ? null : (fields.error ?? status),
    durationMs: elapsedSince(startedMs),
  });
}

/** The PERMISSION_DENIED result, recorded as a `tools.permission_denied` event. */
export function deniedResult(name: string, ctx: ExecContext, startedMs: number): ToolResult {
  ctx.event("tools.permission_denied", { tool: name });
  return toolResult(ToolStatus.PERMISSION_DENIED, startedMs, {
    error: `Permission denied: this context may not use tool "${name}".`,
  });
}

/** The NOT_FOUND result; lists only tools the context may use, so it reveals nothing else. */
export function notFoundResult(
  name: string,
  known: readonly string[],
  ctx: ExecContext,
  startedMs: number,
): ToolResult {
  const usable = known.filter((n) => ctx.permissions.canUseTool(n)).sort();
  const list = usable.length === 0 ? "no tools are available" : `available: ${usable.join(", ")}`;
  return toolResult(ToolStatus.NOT_FOUND, startedMs, {
    error: `Unknown tool "${name}" (${list}).`,
  });
}

/**
 * The result of a call whose deadline passed (TIMEOUT) or whose request was cancelled (ERROR).
 * `limit` says which deadline applied (see {@link describeLimit}).
 */
export function endedResult(
  name: string,
  reason: NervaError,
  startedMs: number,
  limit: string,
): ToolResult {
  const ms = Math.round(elapsedSince(startedMs));
  if (reason.code === ErrorCode.TIMEOUT) {
    return toolResult(ToolStatus.TIMEOUT, startedMs, {
      error: `Tool "${name}" timed out after ${ms} ms (${limit}).`,
    });
  }
  return toolResult(ToolStatus.ERROR, startedMs, {
    error: `Tool "${name}" was cancelled after ${ms} ms: ${reason.message}`,
  });
}

/** Which deadline bounds a call started now: the tool's own timeout or the request's deadline. */
export function describeLimit(ctx: ExecContext, timeoutSeconds: number): string {
  return timeoutSeconds * 1000 <= ctx.remainingMs()
    ? `tool timeout of ${timeoutSeconds} s`
    : "the request's deadline";
}

/** `discover` for a manager holding its tools by name: the ones the context may use. */
export function discoverAllowed(
  ctx: ExecContext,
  tools: Iterable<readonly [string, { readonly info: ToolInfo }]>,
): readonly ToolInfo[] {
  const allowed: ToolInfo[] = [];
  for (const [name, tool] of tools) {
    if (ctx.permissions.canUseTool(name)) allowed.push(tool.info);
  }
  return Object.freeze(allowed);
}
