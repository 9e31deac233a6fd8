import { formatTraceparent } from "../../context/ids.js";
import type { ExecContext } from "../../context/exec-context.js";

/**
 * The environment every child starts from: the host variables matching `allow` (exact names, or
 * prefixes ending in `*`), then `set`. Nothing else of the host's environment crosses over.
 */
export function baseEnv(
  allow: readonly string[],
  set: Readonly<Record<string, string>>,
  source: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const exact = new Set(allow.filter((p) => !p.endsWith("*")));
  const prefixes = allow.filter((p) => p.endsWith("*")).map((p) => p.slice(0, -1));
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(source)) {
    if (value === undefined) continue;
    if (exact.has(key) || prefixes.some((p) => key.startsWith(p))) env[key] = value;
  }
  return Object.assign(env, set);
}

/** The NERVA_* variables describing one invocation to an executable handler (docs/protocol.md). */
export function contextEnv(handler: string, ctx: ExecContext): Record<string, string> {
  const wire = ctx.toWire();
  const env: Record<string, string> = {
    NERVA_HANDLER: handler,
    NERVA_REQUEST_ID: ctx.requestId,
    NERVA_TRACE_ID: ctx.traceId,
    NERVA_PERMISSIONS: JSON.stringify(wire.permissions),
    NERVA_DEPTH: String(ctx.depth),
    NERVA_MEMORY_SCOPE: ctx.memoryScope,
    NERVA_CONTEXT: JSON.stringify(wire),
    NERVA_CHANNEL_FD: "3",
  };
  if (ctx.userId !== null) env["NERVA_USER_ID"] = ctx.userId;
  if (ctx.sessionId !== null) env["NERVA_SESSION_ID"] = ctx.sessionId;
  if (ctx.timeoutAt !== null) env["NERVA_DEADLINE"] = new Date(ctx.timeoutAt).toISOString();
  if (ctx.currentSpanId !== null)
    env["NERVA_TRACEPARENT"] = formatTraceparent(ctx.traceId, ctx.currentSpanId);
  return env;
}
