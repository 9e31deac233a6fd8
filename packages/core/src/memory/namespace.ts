import type { ExecContext } from "../context/exec-context.js";
import { ErrorCode, NervaError } from "../errors.js";
import { Scope } from "../types/status.js";

/** Where one context's memory lives: an encoded identity and the hot tier's session partition. */
export interface MemoryNamespace {
  readonly scope: Scope;
  /** e.g. `user:u1`, `session:u1:s1`, `agent:flight_agent:u1`, `global`. */
  readonly namespace: string;
  readonly session: string;
}

// Each identity part is URI-encoded, so ":" inside an id can never forge another namespace.
const enc = encodeURIComponent;

function missing(scope: Scope, field: string, code: ErrorCode, fix: string): NervaError {
  return new NervaError(
    code,
    `Memory scope "${scope}" needs ${field}, but the context has none. ${fix} Memory never falls back to a shared bucket.`,
    { issues: [{ path: field, message: `required by memory scope "${scope}"` }] },
  );
}

/**
 * The namespace a context's memory lives in for `scope` (default `ctx.memoryScope`). Every scope
 * but `global` includes the identity it implies; when that identity is missing this throws
 * (UNAUTHENTICATED without a user, INVALID_INPUT without a session or agent name).
 *
 * @example
 * memoryNamespace(ExecContext.create({ userId: "u1", memoryScope: "user" })).namespace; // "user:u1"
 */
export function memoryNamespace(ctx: ExecContext, scope: Scope = ctx.memoryScope): MemoryNamespace {
  const session = ctx.sessionId === null ? "" : enc(ctx.sessionId);
  switch (scope) {
    case Scope.GLOBAL:
      return { scope, namespace: "global", session };
    case Scope.USER:
      if (ctx.userId === null) {
        throw missing(
          scope,
          "ctx.userId",
          ErrorCode.UNAUTHENTICATED,
          "Create the context with a userId (ExecContext.create({ userId })).",
        );
      }
      return { scope, namespace: `user:${enc(ctx.userId)}`, session };
    case Scope.SESSION:
      if (ctx.sessionId === null) {
        throw missing(
          scope,
          "ctx.sessionId",
          ErrorCode.INVALID_INPUT,
          'Create the context with a sessionId, or use memoryScope "user".',
        );
      }
      // The user id (when known) is part of the key: a guessed session id never opens another
      // user's conversation.
      return {
        scope,
        namespace: `session:${enc(ctx.userId ?? "")}:${session}`,
        session,
      };
    case Scope.AGENT:
      if (ctx.userId === null) {
        throw missing(
          scope,
          "ctx.userId",
          ErrorCode.UNAUTHENTICATED,
          "Create the context with a userId (ExecContext.create({ userId })).",
        );
      }
      if (ctx.agentName === null) {
        throw missing(
          scope,
          "ctx.agentName",
          ErrorCode.INVALID_INPUT,
          'Use agent scope inside a handler (its context carries the agent name), or ctx.fork({ agentName: "my_agent" }).',
        );
      }
      return { scope, namespace: `agent:${enc(ctx.agentName)}:${enc(ctx.userId)}`, session };
    default:
      throw new NervaError(
        ErrorCode.INVALID_INPUT,
        `Invalid memory scope "${String(scope)}": use one of user, session, agent, global.`,
        { issues: [{ path: "scope", message: "must be user, session, agent or global" }] },
      );
  }
}
